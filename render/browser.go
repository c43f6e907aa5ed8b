package render

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// browser is one Chromium process and its pages.
type browser struct {
	ctx      context.Context // the browser's chromedp context
	cancel   func()
	flags    bool   // IsolateFlags: every tab gets noWebRTC
	pages    int    // pages begun in it
	open     int    // pages open now
	free     []*tab // tabs between pages, for the next
	retiring bool
	mu       sync.Mutex
	done     func()
	// over is the memory (bytes) the watch found past the pool's MaxRSS,
	// when it killed the browser; 0 while it has not.
	over atomic.Int64
	// openAtKill is how many pages it had open when the watch killed it.
	openAtKill atomic.Int64
	// last is the memory (bytes) the watch saw at its last sample.
	last atomic.Int64
	// tabs are its tabs by target ID, for the popups they open.
	tabs sync.Map // target.ID -> *tab
}

// tab is a browser tab, kept from page to page (opening one costs about
// as much as the page), its requests paused for the caller's Fetcher.
type tab struct {
	ctx   context.Context
	close func()
	// dialogs counts the JavaScript dialogs (alert, confirm, prompt,
	// beforeunload) its pages opened, each answered at once; popups the
	// targets they opened, each closed at once.
	dialogs, popups atomic.Int64
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
	t := &tab{ctx: ctx, close: cancel}
	// A dialog blocks its page until it is answered: it is accepted (a
	// prompt gets ""), so that the page goes on as a reader's would.
	// (Subscribed here, before the tab's first page: ranged over below.)
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			t.dialogs.Add(1)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	_, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}})
	if err == nil && b.flags {
		run := true
		_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: noWebRTC, RunImmediately: &run})
	}
	if err != nil {
		cancel()
		return nil, err
	}
	id := chromedp.FromContext(ctx).Target.TargetID
	b.tabs.Store(id, t)
	t.close = func() { b.tabs.Delete(id); cancel() }
	return t, nil
}

// done1 gives a tab back for the next page (a page that failed closes its
// tab instead: it may be hung).
func (b *browser) done1(t *tab) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free = append(b.free, t)
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

// pid is the browser's process, 0 when there is none.
func (b *browser) pid() int {
	c := chromedp.FromContext(b.ctx)
	if c == nil || c.Browser == nil || c.Browser.Process() == nil {
		return 0
	}
	return c.Browser.Process().Pid
}

// begin opens a page slot in the current browser, starting one when there
// is none (or it is retiring), and says which.
func (p *Pool) begin() (*browser, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errClosed
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

// end closes a page slot; a retiring browser closes with its last page. A
// browser that broke (it crashed, or the watch killed it) is retired, and
// so is one whose memory has grown past three quarters of MaxRSS from page
// to page, before the watch would have to stop it in a page.
func (p *Pool) end(b *browser, broken bool) {
	rss := b.last.Load()
	p.mu.Lock()
	if p.cur == b && (broken || rss > p.o.MaxRSS/4*3) {
		p.cur = nil
		b.mu.Lock()
		b.retiring = true
		b.mu.Unlock()
		p.o.Log.Info("retiring the browser", "rss_mib", rss>>20, "broken", broken, "stopped_at_mib", b.over.Load()>>20)
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

// disabled are the browser features that would change which URL a page
// is asked for, or ask for one the page did not: HTTPS-Upgrades (an
// http:// navigation to a public host sent as https://), HTTPS-First, and
// prerendering and prefetching.
const disabled = "Translate,BlinkGenPropertyTrees,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable,HttpsFirstModeV2ForTypicallySecureUsers," +
	"Prerender2,NoStatePrefetch,PrefetchProxy,SpeculationRulesPrefetchFuture,MediaRouter,DialMediaRouteProvider,OptimizationHints"

// start launches a browser: headless, no sandbox (a worker is often root
// in a container), in a network namespace of its own or with the flags of
// IsolateFlags, and a proxy that does not exist, loopback included, either
// way.
func (p *Pool) start() (*browser, error) {
	attr := netnsAttr
	if p.iso == IsolateFlags {
		attr = flagsAttr
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(p.o.Exec), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) { cmd.SysProcAttr = attr() }),
		chromedp.ProxyServer("http://127.0.0.1:9"), chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("disable-features", disabled), chromedp.Flag("disable-quic", true),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("disable-popup-blocking", false), // chromedp's default turns the blocker off
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
	b := &browser{ctx: ctx, cancel: func() { cancelCtx(); cancelAlloc() }, done: p.all.Done, flags: p.iso == IsolateFlags}
	// A target a page opened (a popup, window.open) is closed as it
	// appears: it would outlive the page, its requests not paused.
	created := chromedp.BrowserEvents(ctx, target.TargetCreated)
	go func() {
		for e, err := range created {
			if err != nil {
				return
			}
			if e.TargetInfo == nil || e.TargetInfo.OpenerID == "" {
				continue
			}
			if t, ok := b.tabs.Load(e.TargetInfo.OpenerID); ok {
				t.(*tab).popups.Add(1)
			}
			go chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: e.TargetInfo.TargetID})
		}
	}()
	p.Started.Add(1)
	p.all.Add(1)
	go p.watch(b)
	return b, nil
}

// watchEvery is how often the watch samples a browser's memory while it
// has a page open. A page can fill memory at gigabytes a second: a
// sample every 50 ms lets it pass the cap by a few hundred megabytes at
// most before it is stopped. A sample sums each process's resident memory
// from its statm (a few µs each), which bounds its Pss from above; only
// past the cap, and once every measureEvery for the peak and the retiring
// rule, is the Pss itself read (smaps_rollup walks a process's pages).
const (
	watchEvery   = 50 * time.Millisecond
	measureEvery = time.Second
)

// watch samples b's memory while it has pages open, until it closes; past
// the pool's MaxRSS it kills the browser's processes, which ends its pages
// (each says why: Pool.failed) and retires it.
func (p *Pool) watch(b *browser) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	var measured time.Time
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		b.mu.Lock()
		open := b.open
		b.mu.Unlock()
		if open == 0 {
			continue
		}
		procs := tree(b.pid())
		over := residentSum(procs) > p.o.MaxRSS
		if !over && time.Since(measured) < measureEvery {
			continue
		}
		pss := treePss(procs)
		measured = time.Now()
		b.last.Store(pss)
		for peak := p.peak.Load(); pss > peak && !p.peak.CompareAndSwap(peak, pss); peak = p.peak.Load() {
		}
		if pss > p.o.MaxRSS {
			b.mu.Lock()
			b.openAtKill.Store(int64(b.open))
			b.mu.Unlock()
			b.over.Store(pss)
			p.o.Log.Warn("the browser passed its memory cap while rendering: stopping it", "pss_mib", pss>>20, "max_rss_mib", p.o.MaxRSS>>20)
			kill(procs)
			b.cancel()
			return
		}
	}
}
