// Package render runs pages in headless Chromium tabs that never touch the
// network themselves: every request a page makes (its document, scripts,
// styles, XHR) is paused by the DevTools protocol's Fetch domain and made
// by the caller's Fetcher, which keeps the crawl's rules (robots.txt, the
// private-address guard, scope, the host's tokens, the archive), and the
// answer is handed to the page.
//
// What is not HTTP never reaches the Fetch domain (WebRTC's STUN and TURN,
// QUIC, DNS prefetch, a popup's requests), so the browser is given no
// network at all where the machine allows it: it starts in a network
// namespace of its own with no interface up, and the pool talks to it over
// a pipe (Isolation). Where it cannot, flags, a proxy that does not exist
// and a script that removes WebRTC close what they can. Either way the
// browser runs with HTTPS-Upgrades, HTTPS-First, prefetch and prerender
// off, so that the URL a page is asked for is the URL the crawl fetched;
// a window a page opens is closed as it appears, and a JavaScript dialog
// (alert, confirm, prompt) is accepted so that the page goes on.
//
// A Pool keeps one browser with up to Tabs pages open at once, a new tab a
// page. Its memory is sampled while pages render: past MaxRSS the browser
// is stopped at once, its pages failing with ErrMemory. A browser is
// retired after PagesPerBrowser pages, and a new one started; it is closed
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
	// MaxRSS bounds a browser's memory (bytes, its processes together;
	// 1 GiB): it is sampled while pages render, and a browser past it is
	// stopped at once, its pages failing with ErrMemory. One that passes
	// three quarters of it is retired after the page that found it.
	MaxRSS int64
	// Isolation is how the browser is kept off the network (IsolateAuto).
	Isolation Isolation
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
	if o.Isolation == "" {
		o.Isolation = IsolateAuto
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
	// Dialogs counts the JavaScript dialogs it opened (alert, confirm,
	// prompt, beforeunload), each accepted so that it went on; Popups the
	// windows it opened, each closed as it appeared.
	Dialogs, Popups int
	Took            time.Duration
}

var (
	// ErrNoBrowser: no Chromium to run.
	ErrNoBrowser = errors.New("render: no chromium found (install Debian's chromium package, or give the browser's path)")
	// ErrMemory: the browser's memory passed MaxRSS while the page
	// rendered; the browser was stopped.
	ErrMemory = errors.New("render: the browser's memory passed its cap")
	errClosed = errors.New("render: the pool is closed")
)

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
	iso              Isolation // IsolateNetns or IsolateFlags
}

// New makes a Pool; its first browser starts with its first page. It
// fails when there is no browser to run (Find), or when o.Isolation is
// IsolateNetns and the machine allows no network namespace for it (with
// IsolateAuto the pool then falls back to IsolateFlags, and logs it).
func New(o Options) (*Pool, error) {
	o.defaults()
	path, err := Find(o.Exec)
	if err != nil {
		return nil, err
	}
	o.Exec = path
	if _, err := ParseIsolation(string(o.Isolation)); err != nil {
		return nil, err
	}
	p := &Pool{o: o, tabs: make(chan struct{}, o.Tabs), iso: o.Isolation}
	if p.iso != IsolateFlags {
		err := probeNetns(o.Exec)
		switch {
		case err == nil:
			p.iso = IsolateNetns
		case p.iso == IsolateNetns:
			return nil, err
		default:
			p.iso = IsolateFlags
			o.Log.Warn("the browser shares this machine's network, kept off it by flags only", "why", err)
		}
	}
	return p, nil
}

// Isolation is how the pool's browsers are kept off the network:
// IsolateNetns or IsolateFlags, never IsolateAuto.
func (p *Pool) Isolation() Isolation { return p.iso }

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
// hold, its processes together, sampled while its pages rendered.
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
		return nil, p.failed(ctx, b.ctx, b, url, "opening a tab", err)
	}
	dialogs, popups := t.dialogs.Load(), t.popups.Load()
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
		return nil, p.failed(ctx, tctx, b, url, "loading", err)
	}
	if err := in.quiet(tctx, p.o.Quiet); err != nil {
		return nil, p.failed(ctx, tctx, b, url, "waiting for its requests", err)
	}
	dom, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.documentElement ? document.documentElement.outerHTML : ""`))
	if err != nil {
		return nil, p.failed(ctx, tctx, b, url, "reading the DOM", err)
	}
	// The page stays until the tab's next navigation unloads it: a request
	// it makes meanwhile waits paused, unanswered, and goes with it, or,
	// made once the next page's requests are listened to, is answered as
	// one of that page's, by the same rules. (A navigation to about:blank
	// here, not waited for, could commit after the next page's and leave
	// the tab blank; waited for, it costs a page a fifth of its time.)
	in.mu.Lock()
	defer in.mu.Unlock()
	return &Page{DOM: []byte(dom), Requests: in.requests, Cached: in.cached, Refused: in.refused,
		Dialogs: int(t.dialogs.Load() - dialogs), Popups: int(t.popups.Load() - popups), Took: time.Since(start)}, nil
}

// failed is the error of a page that did not render.
func (p *Pool) failed(ctx, tctx context.Context, b *browser, url, doing string, err error) error {
	switch over := b.over.Load(); {
	case ctx.Err() != nil:
		return ctx.Err()
	case over > 0:
		return &MemoryError{URL: url, doing: doing, Over: over, Max: p.o.MaxRSS, Open: int(b.openAtKill.Load())}
	case errors.Is(tctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("render: %s: %s: the page did not settle within %v", url, doing, p.o.PageTimeout)
	case tctx.Err() != nil:
		return fmt.Errorf("render: %s: %s: the browser closed the page (it crashed, or was killed)", url, doing)
	}
	return fmt.Errorf("render: %s: %s: %w", url, doing, err)
}

// MemoryError is ErrMemory for one page: the browser passed Max while it
// rendered, at Over bytes, with Open pages open (1: this page alone, which
// then surely caused it).
type MemoryError struct {
	URL       string
	Over, Max int64
	Open      int
	doing     string
}

func (e *MemoryError) Error() string {
	return fmt.Sprintf("render: %s: %s: stopped: the browser's memory passed its cap (%d MiB > %d MiB; %d pages open), and the browser was retired",
		e.URL, e.doing, e.Over>>20, e.Max>>20, e.Open)
}

func (e *MemoryError) Is(target error) bool { return target == ErrMemory }
