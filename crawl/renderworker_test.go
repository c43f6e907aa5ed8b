package crawl_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/dupset"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/render"
)

// needChromium skips where there is no browser, and fails where CI says
// there must be one (CRAWLER_REQUIRE_CHROMIUM=1).
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := render.Find(""); errors.Is(err, render.ErrNoBrowser) {
		if os.Getenv("CRAWLER_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("no chromium on PATH; CRAWLER_REQUIRE_CHROMIUM=1 makes this a failure (apt-get install chromium)")
		}
		t.Skip("no chromium on PATH (apt-get install chromium)")
	}
}

// A page that never settles in the browser (its script's request never
// ends) loses no URL: it is tried again, then ends with a failed record
// that says why; a page of the same host that settles is rendered, and
// its record says so. Nothing waits past the render timeout.
func TestAPageThatNeverSettlesFailsWithARecordThatSaysSo(t *testing.T) {
	wholeCrawl(t)
	needChromium(t)
	s := redistest.Real(t)
	hang := make(chan struct{})
	var hung atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hang":
			hung.Add(1)
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		case "/stuck.html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body><script>fetch('/hang')</script></body></html>`)
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><body><div id=app></div><script>document.getElementById('app').innerHTML = '<a href="/stuck.html">s</a>'</script></body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer func() { close(hang); srv.Close() }()
	set := settings.Default()
	set.Rate, set.AllowPrivate, set.Render = 1000, true, settings.RenderAlways
	seed, _ := url.Parse(srv.URL + "/")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := admin.Seed(ctx, s.Client, "stuck", set, []*url.URL{seed}); err != nil {
		t.Fatal(err)
	}
	o := fastOptions("r1")
	o.MaxAttempts = 2
	o.Render = &crawl.RenderOptions{Tabs: 1, PageTimeout: 2 * time.Second}
	w, err := crawl.NewWorker(ctx, s.Client, "stuck", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v (context: %v)", err, ctx.Err())
	}
	recs := exportedByURL(t, ctx, s.Client, "stuck")
	root, stuck := recs[srv.URL+"/"], recs[srv.URL+"/stuck.html"]
	if root.Render == nil || root.Outcome != crawl.OutcomeOK {
		t.Errorf("the page that settles: %+v; want it rendered, ok (its only link is made by its script)", root)
	}
	if stuck.Outcome != crawl.OutcomeFailed || !strings.Contains(stuck.Error, "did not settle") || !strings.Contains(stuck.Error, "gave up after 2 attempts") {
		t.Errorf("the page that never settles: outcome %q, error %q (%+v); want failed, saying it did not settle, after 2 attempts", stuck.Outcome, stuck.Error, stuck.Render)
	}
	if hung.Load() != 2 {
		t.Errorf("the hanging request was made %d times; want once a try", hung.Load())
	}
}

// Pages made to hurt a browser, crawled with --render always: one that
// fills 2 GB under a 1 GiB cap is stopped while it renders and ends at
// once with a record that says why (another attempt would only stop
// another browser); one that waits on alert and confirm before it builds
// its links is rendered, its dialogs counted, and its links followed. The
// worker goes on to the end.
func TestAHostilePageEndsWithARecordAndTheCrawlGoesOn(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a gigabyte in a browser: skipped with -short")
	}
	needChromium(t)
	s := redistest.Real(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<html><body><a href="/hog.html">h</a> <a href="/dialogs.html">d</a></body></html>`)
		case "/hog.html":
			fmt.Fprint(w, `<html><body><script>window.keep = [];
for (let i = 0; i < 20; i++) { const a = new Float64Array(100e6 / 8); a.fill(i + 1); window.keep.push(a) }</script></body></html>`)
		case "/dialogs.html":
			fmt.Fprint(w, `<html><body><div id=app></div><script>alert('hi'); if (confirm('go?')) {
document.getElementById('app').innerHTML = '<a href="/after.html">a</a>' }</script></body></html>`)
		case "/after.html":
			fmt.Fprint(w, `<html><body>the end</body></html>`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate, set.Render = 1000, true, settings.RenderAlways
	seed, _ := url.Parse(srv.URL + "/")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := admin.Seed(ctx, s.Client, "hostile", set, []*url.URL{seed}); err != nil {
		t.Fatal(err)
	}
	o := fastOptions("r1")
	o.Render = &crawl.RenderOptions{Tabs: 1, PageTimeout: 20 * time.Second, MaxRSS: 1 << 30}
	w, err := crawl.NewWorker(ctx, s.Client, "hostile", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v (context: %v)", err, ctx.Err())
	}
	recs := exportedByURL(t, ctx, s.Client, "hostile")
	hog, dialogs, after := recs[srv.URL+"/hog.html"], recs[srv.URL+"/dialogs.html"], recs[srv.URL+"/after.html"]
	if hog.Outcome != crawl.OutcomeFailed || !strings.Contains(hog.Error, "memory passed its cap") || !strings.Contains(hog.Error, "not retried") {
		t.Errorf("the page of 2 GB: outcome %q, error %q; want failed at once, saying the browser passed its memory cap", hog.Outcome, hog.Error)
	}
	if dialogs.Render == nil || dialogs.Render.Dialogs != 2 {
		t.Errorf("the page with dialogs: %+v; want rendered, 2 dialogs counted", dialogs.Render)
	}
	if after.Outcome != crawl.OutcomeOK {
		t.Errorf("the link built after the dialogs: %+v; want it fetched", after)
	}
	if peak := w.BrowserPeak(); peak >= 3<<29 {
		t.Errorf("the browser's peak %d MiB; want under 1.5 GiB", peak>>20)
	}
}

// With --near-duplicates skip and --render always, a render worker renders
// an article and a different article of its site, but not a near copy of
// the first: the copy's record names its article and has no render, and
// the copy's own link is followed all the same.
func TestARenderWorkerDoesNotRenderANearCopy(t *testing.T) {
	wholeCrawl(t)
	needChromium(t)
	s := redistest.Real(t)
	pages := dupset.Triples(9, 1)
	links := map[string]string{"/article/0": `<a href="/copy/0">c</a><a href="/other/0">o</a>`, "/copy/0": `<a href="/from-copy">f</a>`}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch page, ok := pages[r.URL.Path]; {
		case r.URL.Path == "/":
			fmt.Fprint(w, `<html><body><a href="/article/0">a</a></body></html>`)
		case r.URL.Path == "/from-copy":
			fmt.Fprint(w, `<html><body>from the copy</body></html>`)
		case ok:
			w.Write(bytes.Replace(page, []byte("</footer>"), []byte("</footer>"+links[r.URL.Path]), 1))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate, set.Render, set.NearDuplicates = 1000, true, settings.RenderAlways, settings.NearSkip
	set.Deny = []string{"/a/", "/section/"} // the site's related links and navigation
	seed, _ := url.Parse(srv.URL + "/")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := admin.Seed(ctx, s.Client, "near-render", set, []*url.URL{seed}); err != nil {
		t.Fatal(err)
	}
	o := fastOptions("r1")
	o.Concurrency = 1 // the article before its copy
	o.Render = &crawl.RenderOptions{Tabs: 1, PageTimeout: 20 * time.Second}
	w, err := crawl.NewWorker(ctx, s.Client, "near-render", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	recs := exportedByURL(t, ctx, s.Client, "near-render")
	article, other, near := recs[srv.URL+"/article/0"], recs[srv.URL+"/other/0"], recs[srv.URL+"/copy/0"]
	if article.Render == nil || other.Render == nil || article.NearDuplicateOf != "" || other.NearDuplicateOf != "" {
		t.Errorf("the article and the other: rendered %v, %v, near duplicate of %q, %q; want both rendered, neither marked",
			article.Render != nil, other.Render != nil, article.NearDuplicateOf, other.NearDuplicateOf)
	}
	if near.Render != nil || near.NearDuplicateOf != srv.URL+"/article/0" || recs[srv.URL+"/from-copy"].Status != http.StatusOK {
		t.Errorf("the copy: rendered %v, near duplicate of %q, its link's status %d; want not rendered, of the article, 200",
			near.Render != nil, near.NearDuplicateOf, recs[srv.URL+"/from-copy"].Status)
	}
}
