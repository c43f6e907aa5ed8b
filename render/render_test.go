package render_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redcrawl/crawler/render"
)

// pool is a Pool of the test's options, or the test skipped where there is
// no chromium (a failure with CRAWLER_REQUIRE_CHROMIUM=1, as in CI).
func pool(t *testing.T, o render.Options) *render.Pool {
	t.Helper()
	p, err := render.New(o)
	if errors.Is(err, render.ErrNoBrowser) {
		if os.Getenv("CRAWLER_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("no chromium on PATH; CRAWLER_REQUIRE_CHROMIUM=1 makes this a failure (apt-get install chromium)")
		}
		t.Skip("no chromium on PATH (apt-get install chromium)")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// fetcherHeader is what the test's Fetcher sends and a browser does not:
// the site counts every request without it.
const fetcherHeader = "X-Fetched-By"

// site is an application shell: its page builds its links from a script
// and a JSON endpoint, loads a stylesheet, and tries to reach trap (a
// server outside the page's host).
type site struct {
	*httptest.Server
	trap    *httptest.Server
	direct  atomic.Int64 // requests that did not come through the Fetcher
	trapped atomic.Int64
	hang    chan struct{} // closed to let /slow answer
}

func newSite(t *testing.T) *site {
	s := &site{hang: make(chan struct{})}
	s.trap = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.trapped.Add(1) }))
	t.Cleanup(s.trap.Close)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(fetcherHeader) == "" {
			s.direct.Add(1)
		}
		switch r.URL.Path {
		case "/", "/slow.html":
			script := "/app.js"
			if r.URL.Path == "/slow.html" {
				script = "/slow.js"
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!doctype html><html><head><link rel=stylesheet href=/style.css></head><body><div id=app></div><img src=/logo.png><script src=%s></script></body></html>`, script)
		case "/app.js":
			w.Header().Set("Content-Type", "application/javascript")
			fmt.Fprintf(w, `fetch('/api/links').then(r => r.json()).then(ls => {
  for (const l of ls) { const a = document.createElement('a'); a.href = l; a.textContent = l; document.getElementById('app').appendChild(a) }
  fetch(%q).catch(() => {})
})`, s.trap.URL+"/x")
		case "/slow.js":
			w.Header().Set("Content-Type", "application/javascript")
			fmt.Fprint(w, `fetch('/slow')`)
		case "/slow":
			<-s.hang
		case "/style.css":
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprint(w, `a { color: red }`)
		case "/api/links":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `["/p/1", "/p/2", "/p/3"]`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(func() {
		select {
		case <-s.hang:
		default:
			close(s.hang)
		}
		s.Server.Close()
	})
	return s
}

// fetcher makes a page's requests to the site's own host only, sending
// the header, and notes each.
type fetcher struct {
	host string
	mu   sync.Mutex
	got  []string
}

func (f *fetcher) fetch(ctx context.Context, r render.Request) (*render.Response, error) {
	f.mu.Lock()
	f.got = append(f.got, r.URL)
	f.mu.Unlock()
	if !strings.HasPrefix(r.URL, f.host) {
		return nil, errors.New("out of scope")
	}
	return get(ctx, r.URL)
}

func get(ctx context.Context, url string) (*render.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set(fetcherHeader, "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return &render.Response{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: body}, err
}

// A shell page renders to the links its script built, every request it
// made went through the Fetcher (the site saw none without its header),
// the request outside the scope was refused and never reached its server,
// and the image was not requested at all.
func TestAPageIsRenderedThroughTheFetcherAlone(t *testing.T) {
	s := newSite(t)
	p := pool(t, render.Options{})
	f := &fetcher{host: s.URL}
	doc, err := get(context.Background(), s.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	page, err := p.Render(context.Background(), s.URL+"/", doc, f.fetch)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{`href="/p/1"`, `href="/p/2"`, `href="/p/3"`} {
		if !strings.Contains(string(page.DOM), l) {
			t.Errorf("the DOM has no %s: %s", l, page.DOM)
		}
	}
	if n := s.direct.Load(); n != 0 {
		t.Errorf("%d requests reached the site without the Fetcher", n)
	}
	if n := s.trapped.Load(); n != 0 {
		t.Errorf("the out-of-scope server got %d requests", n)
	}
	f.mu.Lock()
	got := strings.Join(f.got, " ")
	f.mu.Unlock()
	for _, want := range []string{"/app.js", "/style.css", "/api/links", s.trap.URL + "/x"} {
		if !strings.Contains(got, want) {
			t.Errorf("the Fetcher was not asked for %s: %s", want, got)
		}
	}
	if strings.Contains(got, "logo.png") {
		t.Errorf("an image was requested: %s", got)
	}
	if page.Requests != 3 || page.Refused < 1 {
		t.Errorf("requests %d, refused %d; want 3 (script, style, JSON) and the trap refused: %s", page.Requests, page.Refused, got)
	}
}

// A browser is retired after its pages and a new one started; a browser
// killed (as the OOM killer would) fails the page it had open, and the
// next page gets a new browser; a page whose request never ends fails at
// the page timeout. No page is lost silently: each is an error to retry.
func TestBrowsersAreRestartedAndHungPagesFail(t *testing.T) {
	s := newSite(t)
	p := pool(t, render.Options{PagesPerBrowser: 2, PageTimeout: 5 * time.Second})
	f := &fetcher{host: s.URL}
	doc, err := get(context.Background(), s.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := p.Render(context.Background(), s.URL+"/", doc, f.fetch); err != nil {
			t.Fatalf("page %d: %v", i, err)
		}
	}
	if p.Started.Load() != 2 || p.Retired.Load() != 1 {
		t.Fatalf("browsers started %d, retired %d after 3 pages at 2 a browser; want 2 and 1", p.Started.Load(), p.Retired.Load())
	}
	if p.PeakRSS() <= 0 {
		t.Errorf("peak RSS %d; want the browser's memory measured", p.PeakRSS())
	}
	slow, err := get(context.Background(), s.URL+"/slow.html")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Render(context.Background(), s.URL+"/slow.html", slow, f.fetch)
	if err == nil || !strings.Contains(err.Error(), "did not settle") {
		t.Fatalf("a page whose request hangs: %v; want it failed at the page timeout", err)
	}
	// Kill the browser while a page waits on its hung request.
	kill := func(ctx context.Context, r render.Request) (*render.Response, error) {
		if strings.HasSuffix(r.URL, "/slow") {
			killBrowser(t)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return f.fetch(ctx, r)
	}
	if _, err := p.Render(context.Background(), s.URL+"/slow.html", slow, kill); err == nil {
		t.Fatal("a page whose browser was killed rendered")
	}
	page, err := p.Render(context.Background(), s.URL+"/", doc, f.fetch)
	if err != nil || !strings.Contains(string(page.DOM), `href="/p/1"`) {
		t.Fatalf("the page after a killed browser: %v", err)
	}
}

// killBrowser kills every chromium this test process started (its
// children), by PID.
func killBrowser(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	me := os.Getpid()
	n := 0
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		var pid, ppid int
		fmt.Sscan(e.Name(), &pid)
		fmt.Sscan(f[1], &ppid)
		if ppid == me && strings.Contains(string(b[:i]), "chrom") {
			syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
	}
	if n == 0 {
		t.Fatal("no browser of this process to kill")
	}
}
