package archive_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
)

// A 304 and a 200 whose payload was archived before are written as revisit
// records: the response's headers without its payload, the profile, and
// the URI and date of the response they refer to, exactly as that
// response's record gives them; the digests still check.
func TestRevisitRecordsReferToTheResponseArchivedBefore(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"1"`)
		if r.Header.Get("If-None-Match") == `"1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/chunked" { // sent in chunks: the payload digest covers the framing, as the record's does
			io.WriteString(w, "<html><body>in ")
			w.(http.Flusher).Flush()
		}
		io.WriteString(w, "<html><body>the same page</body></html>")
	}))
	defer srv.Close()
	cfg := fetch.DefaultConfig()
	cfg.AllowPrivate, cfg.Capture = true, true
	f := fetch.New(cfg)
	dir := t.TempDir()
	w, err := archive.Open(archive.Config{Dir: dir, Worker: "w", Software: "RedCrawl test", Crawl: "t"})
	if err != nil {
		t.Fatal(err)
	}
	first, start := capture(t, f, srv.URL+"/a")
	asked := ""
	loc, digest, err := w.Archive(archive.Exchange{URL: srv.URL + "/a", Started: start, Raw: first.Raw}, func(d string) *archive.Revisit {
		asked = d
		return nil // new content
	})
	if err != nil || loc.Revisit != "" || asked != digest || digest != archive.PayloadDigest(first.Raw.Response) {
		t.Fatalf("first: %+v %q %v (asked about %q); want a response record", loc, digest, err, asked)
	}
	ref := &archive.Revisit{URI: srv.URL + "/a", Date: start}
	chunked, startc := capture(t, f, srv.URL+"/chunked")
	if !bytes.Contains(chunked.Raw.Response, []byte("Transfer-Encoding: chunked")) {
		t.Fatalf("/chunked was not sent in chunks:\n%s", chunked.Raw.Response)
	}
	if _, d, err := w.Write(archive.Exchange{URL: srv.URL + "/chunked", Started: startc, Raw: chunked.Raw}); err != nil || d != archive.PayloadDigest(chunked.Raw.Response) {
		t.Fatalf("chunked: Write's digest %q, PayloadDigest's %q (%v)", d, archive.PayloadDigest(chunked.Raw.Response), err)
	}
	// The same page again, whole, at another URL: identical payload.
	same, start2 := capture(t, f, srv.URL+"/b")
	loc2, digest2, err := w.Archive(archive.Exchange{URL: srv.URL + "/b", Started: start2, Raw: same.Raw}, func(d string) *archive.Revisit {
		if d != digest {
			return nil
		}
		r := *ref
		r.Profile = archive.IdenticalPayloadDigest
		return &r
	})
	if err != nil || loc2.Revisit != archive.IdenticalPayloadDigest || digest2 != digest {
		t.Fatalf("identical: %+v %q %v", loc2, digest2, err)
	}
	// A conditional refetch answered 304.
	start3 := time.Now()
	nm, err := f.FetchIf(t.Context(), srv.URL+"/a", fetch.Validators{ETag: `"1"`})
	if err != nil || nm.Status != http.StatusNotModified || nm.Raw == nil {
		t.Fatalf("FetchIf: %+v, %v", nm, err)
	}
	loc3, _, err := w.Archive(archive.Exchange{URL: srv.URL + "/a", Started: start3, Raw: nm.Raw}, func(string) *archive.Revisit {
		r := *ref
		r.Profile = archive.ServerNotModified
		return &r
	})
	if err != nil || loc3.Revisit != archive.ServerNotModified {
		t.Fatalf("not modified: %+v %v", loc3, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) != 1 {
		t.Fatalf("files %v", files)
	}
	r, err := gowarc.NewWarcFileReader(files[0], 0, gowarc.WithStrictValidation())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var response *gowarc.WarcFields
	revisits := map[int64]gowarc.WarcRecord{}
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
		switch rec.WarcRecord.Type() {
		case gowarc.Response:
			if h := rec.WarcRecord.WarcHeader(); h.Get(gowarc.WarcTargetURI) == srv.URL+"/a" {
				response = h
			}
		case gowarc.Revisit:
			revisits[rec.Offset] = rec.WarcRecord
		}
	}
	if response == nil || len(revisits) != 2 {
		t.Fatalf("%d revisit records, response %v; want one response and two revisits", len(revisits), response)
	}
	for _, c := range []struct {
		loc     archive.Location
		uri     string
		profile string
		status  string
	}{{loc2, srv.URL + "/b", archive.IdenticalPayloadDigest, "200 OK"}, {loc3, srv.URL + "/a", archive.ServerNotModified, "304 Not Modified"}} {
		rv, ok := revisits[c.loc.Offset]
		if !ok {
			t.Fatalf("no revisit record at %+v", c.loc)
		}
		h := rv.WarcHeader()
		if h.Get(gowarc.WarcProfile) != c.profile || h.Get(gowarc.WarcTargetURI) != c.uri ||
			h.Get(gowarc.WarcRefersToTargetURI) != response.Get(gowarc.WarcTargetURI) ||
			h.Get(gowarc.WarcRefersToDate) != response.Get(gowarc.WarcDate) {
			t.Errorf("revisit of %s: profile %q, refers to %q at %q; want %q, %q at %q", c.uri, h.Get(gowarc.WarcProfile),
				h.Get(gowarc.WarcRefersToTargetURI), h.Get(gowarc.WarcRefersToDate), c.profile, response.Get(gowarc.WarcTargetURI), response.Get(gowarc.WarcDate))
		}
		if c.profile == archive.IdenticalPayloadDigest && h.Get(gowarc.WarcPayloadDigest) != response.Get(gowarc.WarcPayloadDigest) {
			t.Errorf("identical payload: digest %q, the response's %q", h.Get(gowarc.WarcPayloadDigest), response.Get(gowarc.WarcPayloadDigest))
		}
		raw, _ := rv.Block().RawBytes()
		block, _ := io.ReadAll(raw)
		if !bytes.Contains(block, []byte(c.status)) || bytes.Contains(block, []byte("the same page")) {
			t.Errorf("revisit of %s holds %q; want the %s headers and no payload", c.uri, block, c.status)
		}
	}
}
