package fetch_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/redcrawl/crawler/fetch"
)

// With Capture, each exchange carries its own bytes as they crossed the
// wire, also when two exchanges share a kept-alive connection; a
// compressed body stays compressed in them, and is read decompressed.
func TestCaptureKeepsEachExchangesBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Test", "yes")
		if r.URL.Path == "/zipped" {
			w.Header().Set("Content-Encoding", "gzip")
			z := gzip.NewWriter(w)
			z.Write([]byte("<p>zipped body</p>"))
			z.Close()
			return
		}
		w.Write([]byte("<p>hello " + r.URL.Path + "</p>"))
	}))
	defer srv.Close()
	cfg := fetch.DefaultConfig()
	cfg.AllowPrivate, cfg.Capture = true, true
	f := fetch.New(cfg)
	for _, path := range []string{"/a", "/b"} {
		res, err := f.Fetch(context.Background(), srv.URL+path)
		if err != nil || res.Raw == nil {
			t.Fatalf("%s: %+v, %v", path, res, err)
		}
		req, resp := string(res.Raw.Request), string(res.Raw.Response)
		if !strings.HasPrefix(req, "GET "+path+" HTTP/1.1\r\n") || !strings.Contains(req, "User-Agent: RedCrawl") {
			t.Errorf("%s: request bytes %q", path, req)
		}
		if !strings.HasPrefix(resp, "HTTP/1.1 200 OK\r\n") || !strings.Contains(resp, "X-Test: yes\r\n") ||
			!strings.HasSuffix(resp, "\r\n\r\n<p>hello "+path+"</p>") {
			t.Errorf("%s: response bytes %q", path, resp)
		}
		if res.Raw.RemoteIP != "127.0.0.1" {
			t.Errorf("%s: remote IP %q", path, res.Raw.RemoteIP)
		}
	}
	res, err := f.Fetch(context.Background(), srv.URL+"/zipped")
	if err != nil || string(res.Body) != "<p>zipped body</p>" {
		t.Fatalf("zipped: body %q, %v", res.Body, err)
	}
	if resp := res.Raw.Response; !bytes.Contains(resp, []byte("Content-Encoding: gzip")) || bytes.Contains(resp, []byte("zipped body")) {
		t.Fatalf("zipped: the raw response should hold the compressed body: %q", resp)
	}
}

// Under concurrency, connections pass from one exchange to the next the
// moment a body is read to its end: each exchange must still get its own
// request and response, and no other's.
func TestCaptureUnderConcurrency(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<p>" + r.URL.Path + "</p>"))
	}))
	defer srv.Close()
	cfg := fetch.DefaultConfig()
	cfg.AllowPrivate, cfg.Capture = true, true
	f := fetch.New(cfg)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				path := fmt.Sprintf("/%d/%d", g, i)
				res, err := f.Fetch(context.Background(), srv.URL+path)
				if err != nil {
					t.Error(err)
					return
				}
				if !strings.HasPrefix(string(res.Raw.Request), "GET "+path+" HTTP/1.1\r\n") ||
					!strings.HasSuffix(string(res.Raw.Response), "\r\n\r\n<p>"+path+"</p>") {
					t.Errorf("%s: captured %q / %q", path, res.Raw.Request, res.Raw.Response)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A 2xx body of a type the crawl does not keep is not downloaded past its
// headers; one it keeps is read whole (and captured whole).
func TestBodiesOfTypesNotKeptAreNotDownloaded(t *testing.T) {
	const size = 4 << 20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(bytes.Repeat([]byte("%"), size))
	}))
	defer srv.Close()
	for _, keep := range []bool{false, true} {
		cfg := fetch.DefaultConfig()
		cfg.AllowPrivate, cfg.Capture = true, true
		if keep {
			cfg.Keep = func(t string) bool { return t == "application/pdf" }
		}
		res, err := fetch.New(cfg).Fetch(context.Background(), srv.URL+"/big.pdf")
		if err != nil {
			t.Fatal(err)
		}
		got := len(res.Raw.Response)
		switch {
		case !keep && (!res.DroppedBody || res.Bytes != 0 || got > size/4):
			t.Errorf("not kept: dropped=%v, %d bytes counted, %d read off the wire of %d", res.DroppedBody, res.Bytes, got, size)
		case keep && (res.DroppedBody || res.Bytes != size || got < size):
			t.Errorf("kept: dropped=%v, %d bytes counted, %d read off the wire of %d", res.DroppedBody, res.Bytes, got, size)
		}
	}
}
