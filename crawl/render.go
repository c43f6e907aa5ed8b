package crawl

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/rendering"
	"github.com/redcrawl/crawler/internal/bounded"
	"github.com/redcrawl/crawler/render"
)

// Rendering (work --render N, seed --render): a host whose pages need a
// browser is in the frontier's render lane, popped only by render
// workers, whose fetch loops are browser tabs (package render). A render
// worker fetches a page as any worker does (robots.txt, its token, the
// archive), then opens it in a tab that answers the page's own requests
// through this worker's fetcher (subresources): the crawl's scope,
// robots.txt, the address guard, a token of the host's bucket each
// (frontier.TakeToken) and the archive, with a cache by URL so that a
// stylesheet is fetched once. The links come from the rendered DOM, kept
// as a WARC conversion record of the page's response.
//
// Which hosts: every one with seed --render always; those with a URL
// that matches --render-match (the host goes to the render lane before
// the URL is queued); with --render auto, those whose samples say so: a
// plain worker offers a host's first pages as samples, and a render
// worker renders each, compares its links with the plain HTML's, and
// tells the frontier (frontier.OfferSample and the rest), which decides.

// RenderOptions make a worker a render worker (work --render N).
type RenderOptions struct {
	Tabs            int           // pages rendered at once: the worker's fetch loops
	Exec            string        // the browser ("": chromium on the PATH)
	PagesPerBrowser int           // a browser is restarted after this many pages (render's default when 0)
	MaxRSS          int64         // or once its processes hold this much memory, bytes
	PageTimeout     time.Duration // a page that does not settle by then fails, and is retried (30 s)
	// Isolation keeps the browser off the network (render.IsolateAuto
	// when ""): a namespace of its own where the machine allows one.
	Isolation render.Isolation
	// CacheBytes bounds the subresource cache (64 MiB when 0).
	CacheBytes int64
}

// RenderInfo is what a record says of a rendered page.
type RenderInfo struct {
	MS int64 `json:"ms"` // from the tab's opening to its DOM read
	// Subresources counts the page's requests that were answered (the
	// document not counted), Cached those a cache answered without a
	// request, Refused those refused (out of scope, robots.txt, images).
	Subresources int `json:"subresources"`
	Cached       int `json:"cached,omitempty"`
	Refused      int `json:"refused,omitempty"`
	// Dialogs counts the JavaScript dialogs the page opened (alert,
	// confirm, prompt), each accepted; Popups the windows it opened,
	// each closed at once.
	Dialogs int `json:"dialogs,omitempty"`
	Popups  int `json:"popups,omitempty"`
	// WARC is where the conversion record of the DOM is.
	WARC *archive.Location `json:"warc,omitempty"`
}

// renders: a render worker renders this answer: an HTML page (no sitemap,
// no error), with --render always or auto (its host is in the render lane
// by the samples' verdict), or its URL matching --render-match. (A page of
// a host in the lane for a match of another URL is fetched plainly.)
func renders(r *settings.RenderRules, item frontier.Item, res *fetch.Result) bool {
	return item.Kind != frontier.KindSitemap && res.HTML && res.Status >= 200 && res.Status < 300 &&
		(r.Mode != settings.RenderNever || r.Matches(item.URL))
}

// rendered is a render worker's answer to p: r as a browser built it
// when the worker renders it (renders, and with --render auto what its
// path prefix taught), r itself when not; or the end of the lease when
// the page could not be rendered.
func (pl *fetchLoops) rendered(ctx context.Context, lv *live, p page, r *fetch.Result, rec *Record) (*fetch.Result, end) {
	if !renders(lv.render, p.Item, r) {
		return r, end{}
	}
	render, learn := pl.byPrefix(ctx, lv, p.url)
	if !render {
		return r, end{}
	}
	dom, e := pl.renderPage(ctx, p, r, rec)
	if !e.ended() && learn {
		pl.learnPrefix(ctx, lv, p, r, dom)
	}
	return dom, e
}

// laneMatches puts the hosts of links that match --render-match in the
// render lane before the links are queued, so that no plain worker pops
// one.
func (pl *fetchLoops) laneMatches(ctx context.Context, lv *live, links []frontier.Item) error {
	if len(lv.render.Match) == 0 {
		return nil
	}
	for _, it := range links {
		u, err := url.Parse(it.URL)
		if err != nil || pl.laned.Has(u.Host) || !lv.render.Matches(it.URL) {
			continue
		}
		if _, err := pl.renderCall().SetLane(ctx, u.Host, frontier.LaneRender); err != nil {
			return err
		}
		pl.laned.Add(u.Host)
	}
	return nil
}

// renderPage renders the page r answered (rendering's first step, the
// document's fetch, done): its record says so and its links come from the
// DOM. When it cannot be rendered (the browser crashed, the page did not
// settle) it is retried as a failed fetch is, and given up with a record
// that says why: the end it returns then ends the lease.
func (pl *fetchLoops) renderPage(ctx context.Context, p page, r *fetch.Result, rec *Record) (*fetch.Result, end) {
	lv := pl.cur.Load()
	deadline := time.Now().Add(pl.renderOpts.PageTimeout)
	rendered, err := pl.render.Render(ctx, p.URL, &render.Response{Status: r.Status, ContentType: "text/html", Body: r.Body},
		pl.subresources(p.url, lv, deadline))
	var memory *render.MemoryError
	switch {
	case errors.As(err, &memory) && memory.Open == 1:
		// It alone was open when the browser passed its cap: another
		// attempt would only stop another browser.
		return nil, failed(*rec, err.Error()+" (not retried)", frontier.Outcome{Fetched: true})
	case err != nil:
		return nil, retry(*rec, err.Error(), 0)
	}
	if e := pl.lapsedDuringFetch(p, *rec); e.ended() {
		return nil, e
	}
	pl.counters.Rendered.Add(1)
	rec.Render = &RenderInfo{MS: rendered.Took.Milliseconds(), Subresources: rendered.Requests, Cached: rendered.Cached, Refused: rendered.Refused,
		Dialogs: rendered.Dialogs, Popups: rendered.Popups}
	if pl.warc != nil && rec.WARC != nil && rec.WARC.RecordID != "" {
		loc, err := pl.warc.Conversion(*rec.WARC, p.URL, time.Now(), "text/html", rendered.DOM)
		if err != nil {
			return nil, unarchived(err)
		}
		rec.Render.WARC = &loc
	}
	dom := *r
	dom.Body = rendered.DOM
	return &dom, end{}
}

// pathPrefix is the prefix a page's need of a browser is learnt by, where
// a host's pages mix: its path's first directory ("/app/"), or "/" for a
// page at the root.
func pathPrefix(u *url.URL) string {
	p := u.EscapedPath()
	if i := strings.IndexByte(strings.TrimPrefix(p, "/"), '/'); i >= 0 {
		return p[:i+2]
	}
	return "/"
}

// byPrefix: with --render auto, whether a render worker renders a page of
// a host that needs a browser, by what its path prefix taught: not once
// its pages found nothing (they are fetched plainly); and whether the
// page is still to teach it (rendered, and compared with its own HTML).
// Verdicts are final, so they are remembered.
func (pl *fetchLoops) byPrefix(ctx context.Context, lv *live, u *url.URL) (render, learn bool) {
	if lv.render.Mode != settings.RenderAuto || lv.render.Matches(u.String()) {
		return true, false
	}
	key := u.Host + " " + pathPrefix(u)
	if v, ok := pl.prefixes.get(key); ok {
		return v == rendering.VerdictRender, false
	}
	v, err := pl.renderCall().PrefixVerdict(ctx, u.Host, pathPrefix(u))
	switch {
	case err != nil:
		pl.log.Warn("reading what a path prefix taught failed: the page is rendered", "url", u.String(), "err", err)
		return true, false
	case v == rendering.VerdictLearning:
		return true, true
	}
	pl.prefixes.put(key, v)
	return v == rendering.VerdictRender, false
}

// learnPrefix tells what rendering a page of a prefix still learnt found.
func (pl *fetchLoops) learnPrefix(ctx context.Context, lv *live, p page, plain, dom *fetch.Result) {
	u := p.url
	_, found := pl.compare(ctx, lv, p, plain, dom)
	v, err := pl.renderCall().LearnPrefix(ctx, u.Host, pathPrefix(u), found, samplesPerHost)
	switch {
	case err != nil:
		pl.log.Warn("telling what a page taught of its path prefix failed", "url", u.String(), "err", err)
	case v == rendering.VerdictPlain:
		pl.log.Info("a path prefix of a host that needs a browser does not: its pages are fetched plainly", "host", u.Host,
			"prefix", pathPrefix(u))
	}
}

// verdicts remembers final verdicts by key, up to bounded.Memory, then
// forgets all and begins again.
type verdicts struct {
	mu sync.Mutex
	m  map[string]string
}

func (v *verdicts) get(key string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.m[key]
	return s, ok
}

func (v *verdicts) put(key, verdict string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= bounded.Memory {
		v.m = map[string]string{}
	}
	v.m[key] = verdict
}

// renderCall is the frontier, for a call rendering makes (a subresource's
// token, a sample, a lane, a prefix's verdict): counted, so that what a
// rendered page costs Redis beyond its plain fetch is known
// (Counters.RenderCalls, bench/render.sh).
func (pl *fetchLoops) renderCall() rendering.Shared {
	pl.counters.RenderCalls.Add(1)
	return pl.lf.render
}

// enqueueRendered queues the links a sample's rendering found that its
// plain fetch missed (a render call too).
func (pl *fetchLoops) enqueueRendered(ctx context.Context, items []frontier.Item) ([]bool, error) {
	pl.counters.RenderCalls.Add(1)
	return pl.lf.enqueue(ctx, items)
}

// BrowserPeak is the most memory a render worker's browser held, its
// processes' proportional shares together (bytes; 0 for a plain worker).
func (w *Worker) BrowserPeak() int64 {
	if w.render == nil {
		return 0
	}
	return w.render.PeakRSS()
}

// RenderIsolation is how a render worker's browser is kept off the
// network ("" for a plain worker).
func (w *Worker) RenderIsolation() render.Isolation {
	if w.render == nil {
		return ""
	}
	return w.render.Isolation()
}
