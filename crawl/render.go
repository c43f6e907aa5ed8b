package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/rendering"
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
			e := requeue(0)
			e.fatal = fmt.Errorf("cannot write the WARC archive, stopping: %w", err)
			return nil, e
		}
		rec.Render.WARC = &loc
	}
	dom := *r
	dom.Body = rendered.DOM
	return &dom, end{}
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
