package archive_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base32"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/internal/tmpfs"
)

func capture(t *testing.T, f *fetch.Fetcher, url string) (*fetch.Result, time.Time) {
	t.Helper()
	start := time.Now()
	res, err := f.Fetch(context.Background(), url)
	if err != nil || res.Raw == nil {
		t.Fatalf("fetch %s: %+v, %v", url, res, err)
	}
	return res, start
}

// sha1Base32 is the digest the WARC fields must hold, computed here
// independently of the library.
func sha1Base32(b []byte) string {
	sum := sha1.Sum(b)
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}

// Written exchanges read back with the library's reader: a warcinfo
// record, then per fetch a request and a response holding the bytes as
// sent, linked to each other, with digests that match the bytes, and a
// Location that points at the response.
func TestWrittenExchangesReadBack(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><body>page %s</body></html>", r.URL.Path)
	}))
	defer srv.Close()
	cfg := fetch.DefaultConfig()
	cfg.AllowPrivate, cfg.Capture = true, true
	f := fetch.New(cfg)
	dir := t.TempDir()
	w, err := archive.Open(archive.Config{Dir: dir, Worker: "host:42", Software: "RedCrawl test", Crawl: "t"})
	if err != nil {
		t.Fatal(err)
	}
	type written struct {
		res    *fetch.Result
		url    string
		loc    archive.Location
		digest string
	}
	var all []written
	for _, p := range []string{"/a", "/b", "/c"} {
		res, start := capture(t, f, srv.URL+p)
		loc, digest, err := w.Write(archive.Exchange{URL: srv.URL + p, Started: start, Raw: res.Raw})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, written{res, srv.URL + p, loc, digest})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 || !strings.HasSuffix(files[0], "-host-42.warc.gz") || !strings.HasPrefix(filepath.Base(files[0]), "redcrawl-") {
		t.Fatalf("files %v; want one redcrawl-TS-SERIAL-host-42.warc.gz, closed", files)
	}
	r, err := gowarc.NewWarcFileReader(files[0], 0, gowarc.WithStrictValidation())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var types []string
	ids := map[string]gowarc.WarcRecord{}
	var responses []gowarc.Record
	for rec, err := range r.Records() {
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Validation) > 0 {
			t.Errorf("record %s at %d: %v", rec.WarcRecord.Type(), rec.Offset, rec.Validation)
		}
		if v, err := rec.WarcRecord.ValidateDigest(); err != nil || len(v) > 0 {
			t.Errorf("digest of %s at %d: %v %v", rec.WarcRecord.Type(), rec.Offset, err, v)
		}
		types = append(types, rec.WarcRecord.Type().String())
		ids[rec.WarcRecord.WarcHeader().GetId(gowarc.WarcRecordID)] = rec.WarcRecord
		if rec.WarcRecord.Type() == gowarc.Response {
			responses = append(responses, rec)
		}
	}
	if got := strings.Join(types, " "); got != "warcinfo request response request response request response" {
		t.Fatalf("record types %q", got)
	}
	for i, wr := range all {
		rec := responses[i]
		h := rec.WarcRecord.WarcHeader()
		raw, err := rec.WarcRecord.Block().RawBytes()
		if err != nil {
			t.Fatal(err)
		}
		block, _ := io.ReadAll(raw)
		body := block[bytes.Index(block, []byte("\r\n\r\n"))+4:]
		switch {
		case !bytes.Equal(block, wr.res.Raw.Response):
			t.Errorf("%s: the response record does not hold the bytes as sent", wr.url)
		case h.Get(gowarc.WarcTargetURI) != wr.url || h.Get(gowarc.WarcIPAddress) != "127.0.0.1":
			t.Errorf("%s: target %q, IP %q", wr.url, h.Get(gowarc.WarcTargetURI), h.Get(gowarc.WarcIPAddress))
		case h.Get(gowarc.WarcBlockDigest) != sha1Base32(block):
			t.Errorf("%s: block digest %q, want %q", wr.url, h.Get(gowarc.WarcBlockDigest), sha1Base32(block))
		case h.Get(gowarc.WarcPayloadDigest) != sha1Base32(body) || wr.digest != sha1Base32(body):
			t.Errorf("%s: payload digest %q (Write said %q), want %q", wr.url, h.Get(gowarc.WarcPayloadDigest), wr.digest, sha1Base32(body))
		case rec.Offset != wr.loc.Offset || wr.loc.File != filepath.Base(files[0]):
			t.Errorf("%s: record at %s:%d, Write said %+v", wr.url, filepath.Base(files[0]), rec.Offset, wr.loc)
		}
		req, ok := ids[h.GetId(gowarc.WarcConcurrentTo)]
		if !ok || req.Type() != gowarc.Request || req.WarcHeader().GetId(gowarc.WarcConcurrentTo) != h.GetId(gowarc.WarcRecordID) {
			t.Errorf("%s: response and request are not linked by WARC-Concurrent-To", wr.url)
		}
	}
	// A Location opens the file at its response.
	r2, err := gowarc.NewWarcFileReader(files[0], all[1].loc.Offset)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	rec, err := r2.Next()
	if err != nil || rec.WarcRecord.WarcHeader().Get(gowarc.WarcTargetURI) != all[1].url {
		t.Fatalf("at %+v: %v, %v", all[1].loc, rec.WarcRecord, err)
	}
	rec.Close()
}

// Files rotate past the size limit, each with its own warcinfo; a file
// being written carries ".open", which Close removes.
func TestRotationAndOpenSuffix(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 50_000))
	}))
	defer srv.Close()
	cfg := fetch.DefaultConfig()
	cfg.AllowPrivate, cfg.Capture = true, true
	f := fetch.New(cfg)
	dir := t.TempDir()
	w, err := archive.Open(archive.Config{Dir: dir, Worker: "w1", MaxSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		res, start := capture(t, f, fmt.Sprintf("%s/%d", srv.URL, i))
		if _, _, err := w.Write(archive.Exchange{URL: srv.URL, Started: start, Raw: res.Raw}); err != nil {
			t.Fatal(err)
		}
	}
	open, _ := filepath.Glob(filepath.Join(dir, "*.open"))
	if len(open) != 1 {
		t.Fatalf("%d files open while writing; want the current one", len(open))
	}
	w.Close()
	all, _ := filepath.Glob(filepath.Join(dir, "*"))
	open, _ = filepath.Glob(filepath.Join(dir, "*.open"))
	if len(all) < 3 || len(open) != 0 {
		t.Fatalf("files %v; want at least three, all closed", all)
	}
	responses := 0
	for _, file := range all {
		r, err := gowarc.NewWarcFileReader(file, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rec, err := range r.Records() {
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 && rec.WarcRecord.Type() != gowarc.Warcinfo {
				t.Errorf("%s begins with a %s record; want warcinfo", file, rec.WarcRecord.Type())
			}
			if rec.WarcRecord.Type() == gowarc.Response {
				responses++
			}
			n++
		}
		r.Close()
	}
	if responses != 3 {
		t.Fatalf("%d response records in all; want 3", responses)
	}
	if _, _, err := w.Write(archive.Exchange{URL: srv.URL, Raw: &fetch.Raw{}}); err == nil {
		t.Fatal("Write after Close succeeded")
	}
	os.RemoveAll(dir)
}

// A write the disk refuses (a small tmpfs fills up) fails, every write
// after it is refused, and Close cuts the torn file back to its last whole
// exchange and says so: what is left reads strictly, record by record,
// and holds exactly the exchanges whose Write succeeded.
func TestFullDiskCutsTheTornFileBack(t *testing.T) {
	dir := tmpfs.Mount(t, 128<<10)
	var logs bytes.Buffer
	w, err := archive.Open(archive.Config{Dir: dir, Worker: "w1", Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 10<<10)
	rng := rand.New(rand.NewPCG(1, 2)) // incompressible, so the disk fills
	var locs []archive.Location
	var failed error
	for i := 0; i < 100 && failed == nil; i++ {
		for j := range body {
			body[j] = byte(rng.Uint32())
		}
		url := fmt.Sprintf("http://h.test/%d", i)
		raw := &fetch.Raw{
			Request:  fmt.Appendf(nil, "GET /%d HTTP/1.1\r\nHost: h.test\r\n\r\n", i),
			Response: append(fmt.Appendf(nil, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body)), body...),
		}
		loc, _, err := w.Write(archive.Exchange{URL: url, Started: time.Now(), Raw: raw})
		if err != nil {
			failed = err
			break
		}
		locs = append(locs, loc)
	}
	if !errors.Is(failed, syscall.ENOSPC) || len(locs) == 0 {
		t.Fatalf("after %d exchanges: %v; want some written, then ENOSPC", len(locs), failed)
	}
	raw := &fetch.Raw{Request: []byte("GET / HTTP/1.1\r\n\r\n"), Response: []byte("HTTP/1.1 204 No Content\r\n\r\n")}
	if _, _, err := w.Write(archive.Exchange{URL: "http://h.test/", Raw: raw}); !errors.Is(err, archive.ErrFailed) {
		t.Fatalf("a small write after the failed one: %v; want ErrFailed", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "cut back to its last whole record") {
		t.Errorf("the cut was not said; log:\n%s", logs.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 || strings.HasSuffix(files[0], ".open") {
		t.Fatalf("files %v; want one, closed", files)
	}
	r, err := gowarc.NewWarcFileReader(files[0], 0, gowarc.WithStrictValidation())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var types []string
	var offsets []int64
	for rec, err := range r.Records() {
		if err != nil {
			t.Fatalf("after %d records: %v", len(types), err)
		}
		types = append(types, string(rec.WarcRecord.Type().String()))
		if rec.WarcRecord.Type() == gowarc.Response {
			offsets = append(offsets, rec.Offset)
		}
		rec.Close()
	}
	want := "warcinfo" + strings.Repeat(" request response", len(locs))
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("records %q; want %q", got, want)
	}
	for i, loc := range locs {
		if loc.Offset != offsets[i] {
			t.Errorf("exchange %d said its response is at %d; it is at %d", i, loc.Offset, offsets[i])
		}
	}
}

// A conversion record holds the rendered DOM as given, refers to the
// response it came from, and reads back valid under strict validation.
func TestAConversionRecordRefersToItsResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><body><div id=app></div><script src=/app.js></script></body></html>`)
	}))
	defer srv.Close()
	cfg := fetch.DefaultConfig()
	cfg.AllowPrivate, cfg.Capture = true, true
	dir := t.TempDir()
	w, err := archive.Open(archive.Config{Dir: dir, Worker: "w", Software: "RedCrawl test", Crawl: "t"})
	if err != nil {
		t.Fatal(err)
	}
	res, start := capture(t, fetch.New(cfg), srv.URL+"/")
	loc, _, err := w.Write(archive.Exchange{URL: srv.URL + "/", Started: start, Raw: res.Raw})
	if err != nil {
		t.Fatal(err)
	}
	dom := []byte(`<html><body><div id="app"><a href="/p/1">one</a></div></body></html>`)
	conv, err := w.Conversion(loc, srv.URL+"/", time.Now(), "text/html", dom)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Conversion(archive.Location{}, srv.URL+"/", time.Now(), "text/html", dom); err == nil {
		t.Error("a conversion record with no response to refer to was written")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := gowarc.NewWarcFileReader(filepath.Join(dir, conv.File), conv.Offset, gowarc.WithStrictValidation())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	h := rec.WarcRecord.WarcHeader()
	raw, err := rec.WarcRecord.Block().RawBytes()
	if err != nil {
		t.Fatal(err)
	}
	block, _ := io.ReadAll(raw)
	switch {
	case rec.WarcRecord.Type() != gowarc.Conversion || len(rec.Validation) > 0:
		t.Fatalf("record %s at the location: %v", rec.WarcRecord.Type(), rec.Validation)
	case h.Get(gowarc.WarcRefersTo) != loc.RecordID || h.Get(gowarc.WarcRecordID) != conv.RecordID:
		t.Errorf("refers to %q (the response is %q); its id %q, Conversion said %q", h.Get(gowarc.WarcRefersTo), loc.RecordID, h.Get(gowarc.WarcRecordID), conv.RecordID)
	case !bytes.Equal(block, dom) || h.Get(gowarc.ContentType) != "text/html" || h.Get(gowarc.WarcTargetURI) != srv.URL+"/":
		t.Errorf("block %q, type %q, target %q", block, h.Get(gowarc.ContentType), h.Get(gowarc.WarcTargetURI))
	}
}

// Config.Closed is told each file once, when it is closed and renamed:
// every file on disk after Close, by its final name, none twice.
func TestClosedIsToldEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	var told []string
	w, err := archive.Open(archive.Config{Dir: dir, Worker: "w1", MaxSize: 2000, Closed: func(p string) { told = append(told, p) }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		body := strings.Repeat("x", 900)
		raw := &fetch.Raw{Request: []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
			Response: []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body))}
		if _, _, err := w.Write(archive.Exchange{URL: fmt.Sprintf("http://x.test/%d", i), Started: time.Now(), Raw: raw}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	sort.Strings(files)
	sort.Strings(told)
	if len(files) < 2 || strings.Join(files, " ") != strings.Join(told, " ") {
		t.Errorf("told %v; files on disk %v: want each file once, by its final name", told, files)
	}
}
