package e2e

import (
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	iawarc "github.com/internetarchive/gowarc"
	"github.com/nlnwa/gowarc/v3"
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

// response is a response record as nlnwa/gowarc reads it.
type response struct{ uri, digest string }

// readWARCs reads every file in dir with nlnwa/gowarc's strict reader,
// failing the test on a file that is not a closed .warc.gz, a record that
// does not validate or a digest that is wrong. It returns the files, their
// response records by "file:offset", and the bytes they take.
func readWARCs(t *testing.T, dir string) ([]string, map[string]response, int64) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	at := map[string]response{}
	var size int64
	for _, f := range files {
		if !strings.HasSuffix(f, ".warc.gz") {
			t.Errorf("%s: not a closed .warc.gz file", f)
			continue
		}
		if fi, err := os.Stat(f); err == nil {
			size += fi.Size()
		}
		r, err := gowarc.NewWarcFileReader(f, 0, gowarc.WithStrictValidation())
		if err != nil {
			t.Fatal(err)
		}
		for rec, err := range r.Records() {
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if v, err := rec.WarcRecord.ValidateDigest(); err != nil || len(v) > 0 || len(rec.Validation) > 0 {
				t.Errorf("%s at %d: %v %v %v", f, rec.Offset, err, v, rec.Validation)
			}
			if rec.WarcRecord.Type() == gowarc.Response {
				hd := rec.WarcRecord.WarcHeader()
				at[fmt.Sprintf("%s:%d", filepath.Base(f), rec.Offset)] = response{hd.Get(gowarc.WarcTargetURI), hd.Get(gowarc.WarcPayloadDigest)}
			}
			rec.Close()
		}
		r.Close()
	}
	return files, at, size
}
