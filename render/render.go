// Package render runs pages in headless Chromium tabs that never touch the
// network themselves: every request a page makes (its document, scripts,
// styles, XHR) is paused by the DevTools protocol's Fetch domain and made
// by the caller's Fetcher, which keeps the crawl's rules (robots.txt, the
// private-address guard, scope, the host's tokens, the archive), and the
// answer is handed to the page. As a second wall the browser is started
// with a proxy that does not exist, loopback included, so a request the
// Fetch domain did not pause (a worker's, a prefetch) goes nowhere.
//
// A Pool keeps one browser with up to Tabs pages open at once, a new tab a
// page. A browser is retired after PagesPerBrowser pages or once its
// processes' memory passes MaxRSS, and a new one started; it is closed
// once its last page is done. A page that does not settle within
// PageTimeout fails (the caller retries it: its lease is the crawl's
// record), and a browser that died is replaced at the next page.
package render

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// Request is one request a page made.
type Request struct {
	URL    string
	Method string
	Type   string // the resource type: Script, Stylesheet, XHR, Fetch, …
}

// Response is what a Fetcher gives the page for a request.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
	// Location is a redirect's target: the page's request follows it.
	Location string
	// Cached: no request was made, the answer came from a cache.
	Cached bool
}

// Fetcher makes a page's request; an error refuses it (the page sees the
// request fail).
type Fetcher func(ctx context.Context, r Request) (*Response, error)

// Options configure a Pool. Zero values take the defaults.
type Options struct {
	// Exec is the browser's path; "" finds chromium on the PATH.
	Exec string
	// Tabs is how many pages are open at once (1).
	Tabs int
	// PagesPerBrowser: a browser is retired after this many pages (200).
	PagesPerBrowser int
	// MaxRSS: a browser whose processes hold more memory (bytes) is
	// retired after the page that found it (1 GiB).
	MaxRSS int64
	// PageTimeout bounds a page, from its navigation until its DOM is read
	// (30 s).
	PageTimeout time.Duration
	// Quiet: after the load event, the page is done once no request of it
	// has been in flight this long (300 ms), or at PageTimeout.
	Quiet time.Duration
	Log   *slog.Logger
}

func (o *Options) defaults() {
	if o.Tabs < 1 {
		o.Tabs = 1
	}
	if o.PagesPerBrowser < 1 {
		o.PagesPerBrowser = 200
	}
	if o.MaxRSS <= 0 {
		o.MaxRSS = 1 << 30
	}
	if o.PageTimeout <= 0 {
		o.PageTimeout = 30 * time.Second
	}
	if o.Quiet <= 0 {
		o.Quiet = 300 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
}

// Page is a rendered page.
type Page struct {
	// DOM is the document's HTML once its scripts ran.
	DOM []byte
	// Requests counts the page's requests the Fetcher answered (the
	// document not counted), Cached those of them a cache answered, and
	// Refused those it refused or the pool does not make (images, media,
	// fonts, the favicon, and every method but GET).
	Requests, Cached, Refused int
	Took                      time.Duration
}

// ErrNoBrowser: no Chromium to run.
var ErrNoBrowser = errors.New("render: no chromium found (install Debian's chromium package, or give the browser's path)")

// Find is the browser's path: exec when given and runnable, else chromium
// (or chromium-browser, google-chrome) on the PATH, else ErrNoBrowser.
func Find(execPath string) (string, error) {
	if execPath != "" {
		p, err := exec.LookPath(execPath)
		if err != nil {
			return "", fmt.Errorf("render: %s cannot be run: %w", execPath, err)
		}
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Pool renders pages in a browser's tabs. Safe for concurrent use.
type Pool struct {
	o    Options
	tabs chan struct{} // a token a page open
	mu   sync.Mutex
	cur  *browser // the browser new pages open in; nil: start one
	all  sync.WaitGroup
	// Started counts the browsers started, Retired those retired.
	Started, Retired atomic.Int64
	peak             atomic.Int64 // the most RSS a browser was seen to hold
	closed           bool
}

// New makes a Pool; its first browser starts with its first page. It
// fails only when there is no browser to run (Find).
func New(o Options) (*Pool, error) {
	o.defaults()
	p, err := Find(o.Exec)
	if err != nil {
		return nil, err
	}
	o.Exec = p
	return &Pool{o: o, tabs: make(chan struct{}, o.Tabs)}, nil
}

// Warm starts the pool's browser now, rather than at its first page, so
// that a browser that cannot start is found at once.
func (p *Pool) Warm() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur != nil || p.closed {
		return nil
	}
	b, err := p.start()
	if err != nil {
		return err
	}
	p.cur = b
	return nil
}

// PeakRSS is the most memory (bytes) a browser of the pool was seen to
// hold, its processes together, measured after each page.
func (p *Pool) PeakRSS() int64 { return p.peak.Load() }

// Close retires the browser and waits for its pages to end.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	b := p.cur
	p.cur = nil
	p.mu.Unlock()
	if b != nil {
		b.retire()
	}
	p.all.Wait()
}

// browser is one Chromium process and its pages.
type browser struct {
	ctx      context.Context // the browser's chromedp context
	cancel   func()
	pages    int    // pages begun in it
	open     int    // pages open now
	free     []*tab // tabs between pages, for the next
	rssAt    time.Time
	lastRSS  int64 // its memory when read at rssAt
	retiring bool
	mu       sync.Mutex
	done     func()
}

// tab is a browser tab, kept from page to page (opening one costs about
// as much as the page), its requests paused for the caller's Fetcher.
type tab struct {
	ctx   context.Context
	close func()
}

// tab is a free tab of the browser, or a new one.
func (b *browser) tab() (*tab, error) {
	b.mu.Lock()
	if n := len(b.free); n > 0 {
		t := b.free[n-1]
		b.free = b.free[:n-1]
		b.mu.Unlock()
		return t, nil
	}
	b.mu.Unlock()
	ctx, cancel := chromedp.NewContext(b.ctx)
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		cancel()
		return nil, err
	}
	return &tab{ctx: ctx, close: cancel}, nil
}

// done gives a tab back for the next page (a page that failed closes its
// tab instead: it may be hung).
func (b *browser) done1(t *tab) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free = append(b.free, t)
}

// measured is the browser's memory, read again when rssEvery has passed.
func (b *browser) measured() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.rssAt) >= rssEvery {
		b.lastRSS, b.rssAt = b.rss(), time.Now()
	}
	return b.lastRSS
}

// retire closes the browser once its last page is done.
func (b *browser) retire() {
	b.mu.Lock()
	b.retiring = true
	last := b.open == 0
	b.mu.Unlock()
	if last {
		b.close()
	}
}

var closeOnce sync.Map // *browser -> struct{}: each browser is closed once

func (b *browser) close() {
	if _, dup := closeOnce.LoadOrStore(b, struct{}{}); dup {
		return
	}
	b.cancel()
	b.done()
}

// begin opens a page slot in the current browser, starting one when there
// is none (or it is retiring), and says which.
func (p *Pool) begin() (*browser, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("render: the pool is closed")
	}
	if p.cur == nil {
		b, err := p.start()
		if err != nil {
			return nil, err
		}
		p.cur = b
	}
	b := p.cur
	b.mu.Lock()
	b.pages++
	b.open++
	if b.pages >= p.o.PagesPerBrowser {
		b.retiring = true
		p.cur = nil
	}
	b.mu.Unlock()
	return b, nil
}

// rssEvery: a browser's memory is read at most this often (a read walks
// /proc, a few milliseconds on a busy machine), after a page.
const rssEvery = time.Second

// end closes a page slot; a retiring browser closes with its last page.
func (p *Pool) end(b *browser, broken bool) {
	rss := b.measured()
	if rss > p.peak.Load() {
		p.peak.Store(rss)
	}
	p.mu.Lock()
	if p.cur == b && (broken || rss > p.o.MaxRSS) {
		p.cur = nil
		b.mu.Lock()
		b.retiring = true
		b.mu.Unlock()
		p.o.Log.Info("retiring the browser", "rss_mib", rss>>20, "broken", broken)
	}
	p.mu.Unlock()
	b.mu.Lock()
	b.open--
	last := b.retiring && b.open == 0
	b.mu.Unlock()
	if last {
		p.Retired.Add(1)
		b.close()
	}
}

// start launches a browser: headless, no sandbox (a worker is often root
// in a container), and a proxy that does not exist, loopback included.
func (p *Pool) start() (*browser, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(p.o.Exec), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.ProxyServer("http://127.0.0.1:9"), chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("dns-prefetch-disable", true), chromedp.Flag("blink-settings", "imagesEnabled=false"))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	// The browser starts now, with a blank first tab, so that a browser
	// that cannot start fails here, once. (Under ctx itself: chromedp
	// binds a browser's life to the context of its first run.)
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		return nil, fmt.Errorf("render: starting %s: %w", p.o.Exec, err)
	}
	p.Started.Add(1)
	p.all.Add(1)
	return &browser{ctx: ctx, cancel: func() { cancelCtx(); cancelAlloc() }, done: p.all.Done}, nil
}

// Render opens url in a new tab, answers the page's document with doc
// (fetched by the caller already, under the page's own token) and its
// other requests with fetch, and returns the DOM once the page is quiet.
func (p *Pool) Render(ctx context.Context, url string, doc *Response, fetch Fetcher) (*Page, error) {
	select {
	case p.tabs <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.tabs }()
	b, err := p.begin()
	if err != nil {
		return nil, err
	}
	page, err := p.render(ctx, b, url, doc, fetch)
	p.end(b, err != nil && ctx.Err() == nil && b.ctx.Err() != nil)
	return page, err
}

func (p *Pool) render(ctx context.Context, b *browser, url string, doc *Response, fetcher Fetcher) (_ *Page, err error) {
	start := time.Now()
	t, err := b.tab()
	if err != nil {
		return nil, fmt.Errorf("render: %s: opening a tab: %w", url, err)
	}
	defer func() {
		if err != nil {
			t.close()
		} else {
			b.done1(t)
		}
	}()
	tctx, cancel := context.WithTimeout(t.ctx, p.o.PageTimeout)
	defer cancel()
	// The caller's end (a stopping worker) ends the page too.
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	in := &interceptor{url: url, doc: doc, fetch: fetcher, ctx: tctx}
	in.touch()
	go in.serve(chromedp.Events(tctx, fetch.RequestPaused))
	if err := chromedp.Do(tctx, chromedp.Navigate(url)); err != nil {
		return nil, p.failed(ctx, tctx, url, "loading", err)
	}
	if err := in.quiet(tctx, p.o.Quiet); err != nil {
		return nil, p.failed(ctx, tctx, url, "waiting for its requests", err)
	}
	dom, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.documentElement ? document.documentElement.outerHTML : ""`))
	if err != nil {
		return nil, p.failed(ctx, tctx, url, "reading the DOM", err)
	}
	// The page stays until the tab's next navigation unloads it: a request
	// it makes meanwhile waits paused, unanswered, and goes with it, or,
	// made once the next page's requests are listened to, is answered as
	// one of that page's, by the same rules. (A navigation to about:blank
	// here, not waited for, could commit after the next page's and leave
	// the tab blank; waited for, it costs a page a fifth of its time.)
	in.mu.Lock()
	defer in.mu.Unlock()
	return &Page{DOM: []byte(dom), Requests: in.requests, Cached: in.cached, Refused: in.refused, Took: time.Since(start)}, nil
}

// failed is the error of a page that did not render.
func (p *Pool) failed(ctx, tctx context.Context, url, doing string, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(tctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("render: %s: %s: the page did not settle within %v", url, doing, p.o.PageTimeout)
	case tctx.Err() != nil:
		return fmt.Errorf("render: %s: %s: the browser closed the page (it crashed, or was killed)", url, doing)
	}
	return fmt.Errorf("render: %s: %s: %w", url, doing, err)
}
