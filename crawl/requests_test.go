package crawl_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
)

// The crawl's --header lines go with every request of every worker.
func TestCrawlHeadersAreSent(t *testing.T) {
	s := redistest.Real(t)
	var with, without atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Crawl") == "yes" && r.Header.Get("Authorization") == "Bearer t" {
			with.Add(1)
		} else {
			without.Add(1)
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<a href="/a">a</a><a href="/b">b</a>`))
	}))
	defer srv.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate = math.Inf(1), true
	set.Headers = []string{"X-Crawl: yes", "Authorization: Bearer t"}
	root, _ := url.Parse(srv.URL + "/")
	if _, err := admin.Seed(context.Background(), s.Client, "headers", set, []*url.URL{root}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := crawl.NewWorker(ctx, s.Client, "headers", fastOptions("w1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if with.Load() < 4 || without.Load() != 0 { // robots.txt, /, /a, /b
		t.Fatalf("%d requests with the headers, %d without", with.Load(), without.Load())
	}
	// A WARC of proxied exchanges would hold the proxy's protocol: refused.
	o := fastOptions("w2")
	o.WARC, o.Proxy = &archive.Config{Dir: t.TempDir()}, &url.URL{Scheme: "http", Host: "127.0.0.1:1"}
	if _, err := crawl.NewWorker(ctx, s.Client, "headers", o); !errors.Is(err, crawl.ErrOptions) {
		t.Fatalf("WARC through a proxy: %v; want ErrOptions", err)
	}
}
