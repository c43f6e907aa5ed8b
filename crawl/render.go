package crawl

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/render"
	"golang.org/x/sync/singleflight"
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
	// CacheBytes bounds the subresource cache (64 MiB when 0).
	CacheBytes int64
}

// Samples: samplesPerHost that found nothing decide that a host needs no
// browser (one that found what the plain fetch missed decides it does).
// A plain worker offers every page it fetched of a host being learnt, up
// to samplesReserve (each such page's script-built links are found only
// if the host turns out to need a browser, by rendering it then), and
// every one of a host that needs one; no more wait than samplesWaiting
// in all (a crawl without a render worker keeps no more than that). A
// render worker claims one for two of its page timeouts (the page, and
// its document's wait for a token): killed, its sample goes to another
// after that.
const (
	samplesPerHost = 3
	samplesReserve = 100
	samplesWaiting = 10_000
)

// RenderInfo is what a record says of a rendered page.
type RenderInfo struct {
	MS int64 `json:"ms"` // from the tab's opening to its DOM read
	// Subresources counts the page's requests that were answered (the
	// document not counted), Cached those a cache answered without a
	// request, Refused those refused (out of scope, robots.txt, images).
	Subresources int `json:"subresources"`
	Cached       int `json:"cached,omitempty"`
	Refused      int `json:"refused,omitempty"`
	// WARC is where the conversion record of the DOM is.
	WARC *archive.Location `json:"warc,omitempty"`
}

// renderRules are the render settings, compiled.
type renderRules struct {
	mode  string
	match []*regexp.Regexp
}

func newRenderRules(s Settings) (*renderRules, error) {
	m, err := compileAll(s.RenderMatch, "--render-match")
	return &renderRules{mode: s.Render, match: m}, err
}

// matches: url matches a --render-match pattern.
func (r *renderRules) matches(url string) bool {
	for _, re := range r.match {
		if re.MatchString(url) {
			return true
		}
	}
	return false
}

// renders: a render worker renders this answer: an HTML page (no sitemap,
// no error), with --render always or auto (its host is in the render lane
// by the samples' verdict), or its URL matching --render-match. (A page of
// a host in the lane for a match of another URL is fetched plainly.)
func (r *renderRules) renders(item frontier.Item, res *fetch.Result) bool {
	return item.Kind != frontier.KindSitemap && res.HTML && res.Status >= 200 && res.Status < 300 &&
		(r.mode != RenderNever || r.matches(item.URL))
}

// boundedSet remembers strings (the hosts this process put in the render
// lane for a --render-match, so that each costs one call; those it
// offered samples of), up to laneMemory, then forgets all and begins
// again: forgetting costs one call more, never a wrong answer.
type boundedSet struct {
	mu    sync.Mutex
	hosts map[string]struct{}
}

const laneMemory = 100_000

func (l *boundedSet) has(host string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.hosts[host]
	return ok
}

func (l *boundedSet) add(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hosts == nil || len(l.hosts) >= laneMemory {
		l.hosts = map[string]struct{}{}
	}
	l.hosts[host] = struct{}{}
}

// laneMatches puts the hosts of links that match --render-match in the
// render lane before the links are queued, so that no plain worker pops
// one.
func (pl *fetchLoops) laneMatches(ctx context.Context, lv *live, links []frontier.Item) error {
	if len(lv.render.match) == 0 {
		return nil
	}
	for _, it := range links {
		u, err := url.Parse(it.URL)
		if err != nil || pl.laned.has(u.Host) || !lv.render.matches(it.URL) {
			continue
		}
		if _, err := pl.fr.SetLane(ctx, u.Host, frontier.LaneRender); err != nil {
			return err
		}
		pl.laned.add(u.Host)
	}
	return nil
}

// renderPage renders the page r answered (rendering's first step, the
// document's fetch, done): its record says so and its links come from the
// DOM. When it cannot be rendered (the browser crashed, the page did not
// settle) it is retried as a failed fetch is, and given up with a record
// that says why; ok is false then, the lease settled.
func (pl *fetchLoops) renderPage(ctx context.Context, l *frontier.Lease, u *url.URL, r *fetch.Result, rec *Record) (*fetch.Result, bool) {
	lv := pl.cur.Load()
	deadline := time.Now().Add(pl.renderOpts.PageTimeout)
	page, err := pl.render.Render(ctx, l.Item.URL, &render.Response{Status: r.Status, ContentType: "text/html", Body: r.Body},
		pl.subresources(u, lv, deadline))
	if err != nil {
		pl.retry(l, *rec, err.Error(), 0)
		return nil, false
	}
	if pl.lapsedDuringFetch(l, *rec) {
		return nil, false
	}
	pl.counters.Rendered.Add(1)
	rec.Render = &RenderInfo{MS: page.Took.Milliseconds(), Subresources: page.Requests, Cached: page.Cached, Refused: page.Refused}
	if pl.warc != nil && rec.WARC != nil && rec.WARC.RecordID != "" {
		loc, err := pl.warc.Conversion(*rec.WARC, l.Item.URL, time.Now(), "text/html", page.DOM)
		if err != nil {
			pl.requeue(l, 0)
			pl.fail(fmt.Errorf("cannot write the WARC archive, stopping: %w", err))
			return nil, false
		}
		rec.Render.WARC = &loc
	}
	dom := *r
	dom.Body = page.DOM
	return &dom, true
}

// errOutOfScope refuses a rendered page's request to a host outside the
// crawl's scope (without --render-third-party).
var errOutOfScope = errors.New("outside the crawl's scope (seed --render-third-party allows it)")

// subresources answers the requests of a page of u's host rendered under
// lv, until deadline (the page's own).
func (pl *fetchLoops) subresources(page *url.URL, lv *live, deadline time.Time) render.Fetcher {
	return func(ctx context.Context, r render.Request) (*render.Response, error) {
		u, err := url.Parse(r.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("not an http(s) URL: %q", r.URL)
		}
		u.Fragment = ""
		key := u.String()
		if u.Host != page.Host && !lv.s.RenderThirdParty && !pl.scope.Load().Allows(u) {
			pl.counters.SubresourcesRefused.Add(1)
			if pair := page.Host + " " + u.Host; !pl.refusedHosts.has(pair) {
				pl.refusedHosts.add(pair)
				pl.log.Info("a rendered page's request outside the crawl's scope refused (once a host)", "page", page.String(), "url", key)
			}
			return nil, errOutOfScope
		}
		if resp, ok := pl.subs.get(key); ok {
			pl.counters.SubresourceHits.Add(1)
			return resp, nil
		}
		v, err, _ := pl.subs.flight.Do(key, func() (any, error) {
			if resp, ok := pl.subs.get(key); ok { // fetched while this call waited its turn
				return resp, nil
			}
			return pl.subresource(ctx, u, key, deadline)
		})
		if err != nil {
			return nil, err
		}
		return v.(*render.Response), nil
	}
}

// subresource fetches one subresource as the crawl fetches anything:
// robots.txt, a token of its host's bucket (waited for, until the page's
// deadline), the fetcher (and its address guard), the archive; a 2xx
// answer is cached.
func (pl *fetchLoops) subresource(ctx context.Context, u *url.URL, key string, deadline time.Time) (*render.Response, error) {
	if v, err := pl.robots.Check(ctx, u); err != nil {
		return nil, fmt.Errorf("robots.txt of %s: %w", u.Host, err)
	} else if !v.Allowed {
		return nil, errors.New("disallowed by robots.txt")
	}
	if err := pl.token(ctx, u.Host, deadline); err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := pl.fetcher.FetchBody(ctx, key)
	pl.counters.Requests.Add(1)
	pl.counters.Subresources.Add(1)
	if err != nil {
		return nil, err
	}
	if pl.warc != nil && res.Raw != nil {
		if _, _, err := pl.warc.Archive(archive.Exchange{URL: key, Started: start, Raw: res.Raw, Truncated: res.Truncated}, nil); err != nil {
			pl.fail(fmt.Errorf("cannot write the WARC archive, stopping: %w", err))
			return nil, err
		}
	}
	resp := &render.Response{Status: res.Status, ContentType: res.ContentType, Body: res.Body, Location: res.Location}
	if res.Status >= 200 && res.Status < 300 && !res.Truncated {
		pl.subs.put(key, resp)
	}
	return resp, nil
}

// token waits for a token of host's bucket, by deadline at the latest.
func (pl *fetchLoops) token(ctx context.Context, host string, deadline time.Time) error {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("no token of %s before the page's end", host)
		}
		t, err := pl.fr.TakeToken(ctx, host, left)
		var no *frontier.NoTokenError
		switch {
		case errors.As(err, &no):
			if no.Retry >= left {
				return fmt.Errorf("no token of %s before the page's end", host)
			}
			sleep(ctx, no.Retry)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		case err != nil:
			return err
		}
		if d := time.Until(t.NotBefore); d > 0 {
			sleep(ctx, d)
		}
		return ctx.Err()
	}
}

// subCache is a render worker's cache of subresources by URL, shared by
// its tabs, bounded in bytes: the least recently used go first.
type subCache struct {
	flight singleflight.Group
	mu     sync.Mutex
	max    int64
	size   int64
	order  *list.List // of *subEntry, most recent first
	byURL  map[string]*list.Element
}

type subEntry struct {
	url  string
	resp *render.Response
}

func newSubCache(max int64) *subCache {
	return &subCache{max: max, order: list.New(), byURL: map[string]*list.Element{}}
}

func (c *subCache) get(url string) (*render.Response, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byURL[url]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	r := *e.Value.(*subEntry).resp
	r.Cached = true
	return &r, true
}

func (c *subCache) put(url string, r *render.Response) {
	n := int64(len(r.Body) + len(url))
	if n > c.max/8 { // one entry never takes more than an eighth
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byURL[url]; ok {
		return
	}
	c.byURL[url] = c.order.PushFront(&subEntry{url: url, resp: r})
	c.size += n
	for c.size > c.max {
		last := c.order.Back()
		e := last.Value.(*subEntry)
		c.order.Remove(last)
		delete(c.byURL, e.url)
		c.size -= int64(len(e.resp.Body) + len(e.url))
	}
}

// offerSample: with --render auto, a plain worker offers an HTML page it
// fetched as a sample of its host, unless this process knows the host
// needs none (it has its verdict, or its samples).
func (pl *fetchLoops) offerSample(ctx context.Context, lv *live, item frontier.Item, u *url.URL, r *fetch.Result) {
	if lv.render.mode != RenderAuto || pl.render != nil || item.Kind == frontier.KindSitemap || !r.HTML ||
		r.Status < 200 || r.Status >= 300 || pl.sampled.has(u.Host) {
		return
	}
	queued, verdict, err := pl.fr.OfferSample(ctx, frontier.Sample{URL: item.URL, Host: u.Host, Depth: item.Depth, Parent: item.Parent},
		samplesReserve, samplesWaiting)
	switch {
	case err != nil:
		pl.log.Warn("offering a sample of a host to the render workers failed", "host", u.Host, "err", err)
	case verdict == frontier.VerdictPlain || !queued && verdict == frontier.VerdictLearning:
		pl.sampled.add(u.Host) // no more of it: it needs no browser, or has its reserve
	case !queued:
		pl.log.Warn("a page of a host that needs a browser was fetched plainly, and too many samples wait to render it: "+
			"links its scripts make are missed (start more render workers)", "url", item.URL)
	}
}

// sampleLoop: a render worker of a crawl with --render auto renders the
// samples plain workers offer, one at a time, until ctx ends.
func (pl *fetchLoops) sampleLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if pl.cur.Load().render.mode != RenderAuto {
			sleep(ctx, time.Second)
			continue
		}
		s, raw, verdict, ok, err := pl.fr.ClaimSample(ctx, 2*pl.renderOpts.PageTimeout)
		switch {
		case err != nil:
			pl.log.Warn("claiming a sample failed", "err", err)
			sleep(ctx, time.Second)
		case !ok:
			sleep(ctx, 250*time.Millisecond)
		case verdict == frontier.VerdictPlain: // learnt since it was offered: nothing to render
			pl.tell(ctx, s, raw, false, nil)
		default:
			pl.sample(ctx, s, raw)
		}
	}
}

// sample renders one sample and compares its links with its plain
// HTML's: found, rendering found links the plain fetch missed (one, and
// a tenth more than the plain page had). A host found to need a browser
// goes to the render lane, and the links its samples found are queued.
func (pl *fetchLoops) sample(ctx context.Context, s frontier.Sample, raw string) {
	lv := pl.cur.Load()
	u, err := url.Parse(s.URL)
	if err != nil {
		pl.tell(ctx, s, raw, false, nil)
		return
	}
	deadline := time.Now().Add(pl.renderOpts.PageTimeout)
	doc, plain, err := pl.sampleDocument(ctx, u, s, deadline)
	if err != nil || !plain.HTML || plain.Status < 200 || plain.Status >= 300 {
		if ctx.Err() == nil {
			pl.tell(ctx, s, raw, false, nil)
		}
		return
	}
	page, err := pl.render.Render(ctx, s.URL, &render.Response{Status: plain.Status, ContentType: "text/html", Body: plain.Body},
		pl.subresources(u, lv, deadline))
	if err != nil {
		if ctx.Err() == nil {
			pl.log.Warn("rendering a sample failed: told as finding nothing", "url", s.URL, "err", err)
			pl.tell(ctx, s, raw, false, nil)
		}
		return
	}
	if pl.warc != nil && doc != nil && doc.RecordID != "" {
		if _, err := pl.warc.Conversion(*doc, s.URL, time.Now(), "text/html", page.DOM); err != nil {
			pl.fail(fmt.Errorf("cannot write the WARC archive, stopping: %w", err))
			return
		}
	}
	item := frontier.Item{URL: s.URL, Depth: s.Depth, Parent: s.Parent}
	before := pl.links(lv, u, item, plain, &Record{})
	dom := *plain
	dom.Body = page.DOM
	after := pl.links(lv, u, item, &dom, &Record{})
	had := make(map[string]bool, len(before))
	for _, l := range before {
		had[l.URL] = true
	}
	var missed []frontier.Item
	for _, l := range after {
		if !had[l.URL] {
			missed = append(missed, l)
		}
	}
	pl.tell(ctx, s, raw, len(missed) >= 1+len(before)/10, missed)
}

// sampleDocument fetches a sample's page as a subresource is fetched (it
// is no popped URL: robots.txt and a token of its own), archived.
func (pl *fetchLoops) sampleDocument(ctx context.Context, u *url.URL, s frontier.Sample, deadline time.Time) (*archive.Location, *fetch.Result, error) {
	if v, err := pl.robots.Check(ctx, u); err != nil || !v.Allowed {
		return nil, nil, fmt.Errorf("robots.txt: %v", err)
	}
	if err := pl.token(ctx, u.Host, deadline); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	r, err := pl.fetcher.Fetch(ctx, s.URL)
	pl.counters.Requests.Add(1)
	if err != nil {
		return nil, nil, err
	}
	if pl.warc == nil || r.Raw == nil {
		return nil, r, nil
	}
	loc, _, err := pl.warc.Archive(archive.Exchange{URL: s.URL, Started: start, Raw: r.Raw, Truncated: r.Truncated}, nil)
	if err != nil {
		pl.fail(fmt.Errorf("cannot write the WARC archive, stopping: %w", err))
		return nil, nil, err
	}
	return &loc, r, nil
}

// tell says what a sample found; a host found to need a browser goes to
// the render lane, and the links only rendering found are queued.
func (pl *fetchLoops) tell(ctx context.Context, s frontier.Sample, raw string, found bool, missed []frontier.Item) {
	verdict, err := pl.fr.TellSample(ctx, s, raw, found, samplesPerHost)
	if err != nil {
		pl.log.Warn("telling a sample failed; its claim lapses and another render worker renders it", "url", s.URL, "err", err)
		return
	}
	if verdict != frontier.VerdictRender {
		return
	}
	if _, err := pl.fr.SetLane(ctx, s.Host, frontier.LaneRender); err != nil {
		pl.log.Warn("putting a host in the render lane failed", "host", s.Host, "err", err)
		return
	}
	if found {
		pl.log.Info("rendering finds what the plain fetch missed: the host goes to the render lane", "host", s.Host,
			"sample", s.URL, "missed_links", len(missed))
	}
	if len(missed) > 0 {
		if _, err := pl.fr.Enqueue(ctx, missed); err != nil {
			pl.log.Warn("queueing a sample's links failed", "url", s.URL, "err", err)
		}
	}
}

// Renders: the crawl renders pages (seed --render always or auto, or a
// --render-match).
func (s Settings) Renders() bool { return s.Render != RenderNever || len(s.RenderMatch) > 0 }

// RenderWorkerSuffix ends a render worker's id (work --render runs one
// beside the plain worker, under the same name and this), which status
// counts.
const RenderWorkerSuffix = "+render"

// ReadRender is status's word on rendering (the dashboard's too), for a
// crawl whose settings s render (Renders), with the workers alive.
func ReadRender(ctx context.Context, fr *frontier.Frontier, s Settings, workers []string) (*RenderStatus, error) {
	lanes, err := fr.Lanes(ctx)
	if err != nil {
		return nil, err
	}
	rs := &RenderStatus{Mode: s.Render, LaneQueued: lanes.Ready[frontier.LaneRender], Hosts: lanes.RenderHosts()}
	if s.Render == RenderAuto {
		learned, waiting, err := fr.LearnedHosts(ctx)
		if err != nil {
			return nil, err
		}
		rs.Learned, rs.SamplesWaiting = map[string]string{}, waiting
		for h, l := range learned {
			rs.Learned[h] = l.Verdict
		}
	}
	for _, w := range workers {
		if strings.HasSuffix(w, RenderWorkerSuffix) {
			rs.Workers++
		}
	}
	rs.Line = rs.line()
	return rs, nil
}

// line is the status line: the lane, what was learnt, the render workers
// (and, without one, that the lane waits for one).
func (rs *RenderStatus) line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s; render lane: %d hosts queued", rs.Mode, rs.LaneQueued)
	if len(rs.Hosts) > 0 {
		fmt.Fprintf(&b, ", %d hosts put there", len(rs.Hosts))
	}
	if rs.Learned != nil {
		n := map[string]int{}
		for _, v := range rs.Learned {
			n[v]++
		}
		fmt.Fprintf(&b, "; learnt: %d hosts need a browser, %d do not, %d learning, %d samples waiting",
			n[frontier.VerdictRender], n[frontier.VerdictPlain], n[frontier.VerdictLearning], rs.SamplesWaiting)
	}
	fmt.Fprintf(&b, "; %d render workers", rs.Workers)
	if rs.Workers == 0 && (rs.LaneQueued > 0 || rs.SamplesWaiting > 0) {
		b.WriteString(" — the render lane waits for one: start 'crawler work --render N'")
	}
	return b.String()
}
