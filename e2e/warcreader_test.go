package e2e

import (
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	iawarc "github.com/internetarchive/gowarc"
)

// A second, independent WARC reader: the Internet Archive's gowarc (a
// separate implementation from nlnwa/gowarc, which writes the files).
// It runs wherever Go does; webrecorder's warcio.js is a third where npm
// answers (checkWithWarcio).

// iaResponse is a response record as the Internet Archive's reader sees it.
type iaResponse struct {
	file          string
	offset        int64
	uri, digest   string // digest: WARC-Payload-Digest as written ("sha1:…")
	blockDigestOK bool   // WARC-Block-Digest is the SHA-1 of the block read
}

// readWithInternetArchive reads a WARC file whole and returns its response
// records; a file it cannot read to its end fails the test.
func readWithInternetArchive(t *testing.T, file string) []iaResponse {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := iawarc.NewReader(f)
	if err != nil {
		t.Fatalf("internetarchive/gowarc: %s: %v", file, err)
	}
	defer r.Close()
	var out []iaResponse
	for {
		rec, err := r.ReadRecord()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("internetarchive/gowarc: %s: %v", file, err)
		}
		if rec.Header.Get("WARC-Type") == "response" {
			h := sha1.New()
			if _, err := rec.Content.Seek(0, io.SeekStart); err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(h, rec.Content); err != nil {
				t.Fatal(err)
			}
			block := "sha1:" + base32.StdEncoding.EncodeToString(h.Sum(nil))
			out = append(out, iaResponse{file: filepath.Base(file), offset: rec.Offset, uri: rec.Header.Get("WARC-Target-URI"),
				digest: rec.Header.Get("WARC-Payload-Digest"), blockDigestOK: strings.EqualFold(block, rec.Header.Get("WARC-Block-Digest"))})
		}
		rec.Content.Close()
	}
}

// checkWithInternetArchive has the Internet Archive's reader read every
// file: each response it finds must be one ours found, at the same place,
// with the same URL and payload digest, its block digest right.
func checkWithInternetArchive(t *testing.T, files []string, same func(file string, offset int64, uri, digest string) bool, responses int) {
	t.Helper()
	n := 0
	for _, f := range files {
		for _, rec := range readWithInternetArchive(t, f) {
			n++
			if !rec.blockDigestOK {
				t.Errorf("internetarchive/gowarc: %s at %s:%d: block digest does not match the block", rec.uri, rec.file, rec.offset)
			}
			if !same(rec.file, rec.offset, rec.uri, rec.digest) {
				t.Errorf("internetarchive/gowarc sees %s at %s:%d with digest %s; ours does not", rec.uri, rec.file, rec.offset, rec.digest)
			}
		}
	}
	if n != responses {
		t.Errorf("internetarchive/gowarc reads %d response records; ours read %d", n, responses)
	}
}
