package crawl

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/recrawl"
	"github.com/redcrawl/crawler/internal/bounded"
	"github.com/redcrawl/crawler/parse"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redcrawl/crawler/render"
)

// fetchLoops take a leased URL to its end, one page at a time in each of a
// worker's fetch loops: admit (robots.txt, the host's Crawl-delay; the
// URL came with its host's token, lease.go) → the token's time → fetch →
// parse → an outcome handed to the exchanger. A URL that may not
// be fetched now goes back to the frontier at once (requeued behind its
// host's due time, or deferred); every other path ends in an outcome. An
// error that prevents even that leaves the lease to expire, and the
// scheduler's sweep queues the URL again.
type fetchLoops struct {
	cur         *atomic.Pointer[live] // the settings acted on now (Worker.reload)
	worker      string                // the worker's id, for records
	maxAttempts int
	fetcher     *fetch.Fetcher
	robots      *politeness.Robots
	pauses      *pauses      // hosts paused for every worker, as far as this one knows
	lf          loopFrontier // the frontier as the loops use it
	held        *sync.Map
	scope       *atomic.Pointer[parse.Scope]
	counters    *Counters
	log         *slog.Logger
	ex          *exchanger
	skips       *skips        // discovered URLs not followed, by reason
	failing     *failing      // hosts' runs of failed requests, in this worker
	pages       *atomic.Int64 // the crawl's pages fetched so far (with a page budget)
	metrics     *metrics
	warc        *archive.Writer  // nil: no archive
	claims      *claims          // with warc: the payload digest claims, batched
	fail        func(error)      // stops the worker for good (the archive cannot be written)
	now         func() time.Time // the clock the token windows and the loops' times are read on (Options.Clock)
	// A render worker's (Options.Render): its browser's tabs, and the
	// cache of their pages' subresources; a plain worker's: the hosts it
	// offered samples of (offerSample). Both: the hosts it put in the
	// render lane for a --render-match.
	render     *render.Pool
	renderOpts RenderOptions
	subs       *subCache
	sampled    *bounded.Set
	laned      *bounded.Set
	// refusedHosts: the pairs "page-host target-host" of out-of-scope
	// requests said in the log, once each.
	refusedHosts *bounded.Set
	prefixes     *verdicts // a render worker's: what path prefixes taught (byPrefix)
}

// loop is fetch goroutine i.
func (pl *fetchLoops) loop(stop, work context.Context, i int) {
	for {
		l, ok := pl.ex.take(stop, i)
		if !ok {
			return
		}
		start := pl.now()
		fetched := !pl.late(l.lease, false)
		if fetched {
			pl.process(work, l.lease, l.info)
		}
		pl.ex.worked(i, pl.now().Sub(start), fetched)
	}
}

// process takes one leased URL to its end.
func (pl *fetchLoops) process(ctx context.Context, l *frontier.Lease, info frontier.PopInfo) {
	item := l.Item
	rec := Record{URL: item.URL, Depth: item.Depth, Worker: pl.worker, FetchedAt: time.Now().UTC(),
		Parent: item.Parent, Attempt: item.Attempts + 1, PreviousErrors: item.Errors}
	u, ok := pl.cleared(ctx, l, info, &rec)
	if !ok {
		return
	}
	start := time.Now()
	rec.FetchedAt = start.UTC()     // after the politeness waits: when the request went out
	visit := recrawl.Decode(item.V) // nil: the URL's first fetch
	r, err := pl.fetchOf(item, visit)(ctx, item.URL)
	rec.FetchMS = time.Since(start).Milliseconds()
	if err != nil {
		pl.fetchFailed(ctx, l, u, rec, err)
		return
	}
	pl.counters.Requests.Add(1)
	if pl.lapsedDuringFetch(l, rec) {
		return
	}
	pl.failing.ok(u.Host)
	pl.metrics.bytes.Add(float64(r.Bytes))
	pl.metrics.fetch.Observe(r.Duration.Seconds())
	rec.Status, rec.Proto, rec.ContentType, rec.Bytes, rec.Truncated, rec.Headers = r.Status, r.Proto, r.ContentType, r.Bytes, r.Truncated, r.Headers
	rec.DroppedBody = r.DroppedBody
	lv := pl.cur.Load() // what the response yields is read under one version of the settings
	rec.SettingsVersion = lv.s.Version
	head := declared(r, lv.s.AgentToken())
	canon, dup := pl.canonical(lv, item, r, head, &rec) // with --canonical skip, a duplicate is not archived
	// Archived: every response whose body was read, but HTML only when the
	// crawl keeps HTML (it is always read, for its links).
	var archived *recrawl.Visit // where the content this answer stands for is archived whole
	archivable := pl.warc != nil && r.Raw != nil && !r.DroppedBody && !dup &&
		(!r.HTML || lv.s.Keeps(r.ContentType) || r.Status == http.StatusNotModified && visit != nil && visit.RefDate != 0)
	if archivable && !pl.noArchive(lv, r, head, &rec) { // with --obey-noarchive, what its owner said not to archive is recorded only
		loc, digest, ref, err := pl.archive(ctx, item.URL, visit, r, start)
		if err != nil {
			// Crawling on without the archive would lose what the user
			// asked to keep: the page goes back, and the worker stops.
			pl.requeue(l, 0)
			pl.fail(fmt.Errorf("cannot write the WARC archive, stopping: %w", err))
			return
		}
		rec.WARC, rec.PayloadDigest, archived = &loc, digest, ref
	}
	if fetch.TransientStatus(r.Status) {
		pl.notNow(ctx, l, u, rec, r)
		return
	}
	plain := r
	if pl.render != nil && !dup && renders(lv.render, item, r) {
		if render, learn := pl.byPrefix(ctx, lv, u); render {
			if r, ok = pl.renderPage(ctx, l, u, r, &rec); !ok {
				return
			}
			if learn {
				pl.learnPrefix(ctx, lv, u, item, plain, r)
			}
		}
	}
	o := pl.outcome(ctx, lv, u, item, visit, r, &rec, archived)
	canonicalOutcome(&o, canon, dup)
	if err := pl.laneMatches(ctx, lv, o.Children); err != nil {
		// Queued now, a link could be popped by a plain worker: the page
		// is retried once Redis answers.
		pl.retry(l, rec, fmt.Sprintf("putting a host in the render lane: %v", err), 0)
		return
	}
	// The sample is offered before the page's lease ends: a crawl whose
	// only page so far is this one would otherwise be found over (nothing
	// queued, leased or sampled) in between, its scripts' links never
	// rendered.
	pl.offerSample(ctx, lv, item, u, plain)
	pl.finish(l, rec, o)
}

// outcome is what an answered fetch leaves: its links (a page's, a
// sitemap's; none for 304 Not Modified), its stat, and what the next
// visit compares against.
func (pl *fetchLoops) outcome(ctx context.Context, lv *live, u *url.URL, item frontier.Item, visit *recrawl.Visit, r *fetch.Result, rec *Record, archived *recrawl.Visit) frontier.Outcome {
	o := frontier.Outcome{Stat: OutcomeOK, Fetched: true, FetchTime: r.Duration}
	digest := rec.PayloadDigest
	switch {
	case r.Status == http.StatusNotModified && visit != nil:
		// Unchanged since the validators were given: no body, no links.
		o.Stat, digest = OutcomeUnchanged, visit.Digest
		rec.PayloadDigest = digest
	case item.Kind == frontier.KindSitemap:
		o.Children = pl.sitemapRoom(ctx, lv, u.Host, pl.sitemapLinks(lv, item, r, rec))
	default:
		o.Children = pl.links(lv, u, item, r, rec)
	}
	if r.Status >= 400 {
		o.Stat = OutcomeHTTPError
	}
	if rec.LinksCut > 0 {
		o.Also = append(o.Also, CounterLinksCut)
	}
	if item.Kind != frontier.KindSitemap {
		if digest == "" && lv.s.KeepVisits { // compared at the next fetch: kept only with a visit
			digest = answerDigest(r.Body, rec.Headers)
		}
		revisitOutcome(lv.s, visit, rec, &o, digest, archived)
		o.Change = rec.Change
	}
	return o
}

// links are the URLs a response leads to, in scope and within the depth
// limit: a redirect's target (at the same depth: a redirect is not a step
// further from the seed) and an HTML page's links.
func (pl *fetchLoops) links(lv *live, u *url.URL, item frontier.Item, r *fetch.Result, rec *Record) []frontier.Item {
	var children []frontier.Item
	scope := pl.scope.Load()
	// What the page's owner says of it, in its headers (any response: a
	// PDF can say it nowhere else) and, below, its robots meta tags.
	robots := parse.XRobotsTag(r.RobotsTags, lv.s.AgentToken())
	rec.Robots = robots.Words()
	if r.Location != "" {
		if t, err := parse.CanonicalizeKeeping(nil, r.Location, lv.s.KeepTrackingParams); err == nil {
			rec.Redirect = t.String()
			if scope.Allows(t) && pl.follow(lv, t, rec.Redirect) {
				children = append(children, frontier.Item{URL: rec.Redirect, Depth: item.Depth, Parent: item.URL})
			}
		}
	}
	if !r.HTML || r.Status < 200 || r.Status >= 300 {
		return children
	}
	page, err := parse.Extract(u, bytes.NewReader(r.Body), parse.Limits{KeepTracking: lv.s.KeepTrackingParams, MaxLinks: lv.s.MaxLinks,
		Agent: lv.s.AgentToken()}, lv.fields...)
	if err != nil {
		rec.Error = fmt.Sprintf("parse: %v", err)
		return children
	}
	header := robots.NoFollow
	robots.Merge(page.Robots)
	rec.Robots = robots.Words()
	if header { // X-Robots-Tag: nofollow (a meta tag's is parse's already)
		page.Links, page.Truncated, page.Cut = nil, false, 0
	}
	rec.Title, rec.Links, rec.Extract = page.Title, len(page.Links), page.Fields
	if page.Truncated {
		rec.LinksCut = page.Cut // counted with the record (page's Outcome.Also)
	}
	if lv.s.MaxDepth >= 0 && item.Depth >= lv.s.MaxDepth {
		return children
	}
	for _, link := range page.Links {
		if lu, err := url.Parse(link); err == nil && scope.Allows(lu) && pl.follow(lv, lu, link) {
			children = append(children, frontier.Item{URL: link, Depth: item.Depth + 1, Parent: item.URL})
		}
	}
	return children
}

// timeoutRun failed requests in a row pause a host.
const timeoutRun = 3

// failing counts each host's failed requests in a row (no answer at all),
// in this worker; bounded: past maxHosts it starts afresh.
type failing struct {
	mu sync.Mutex
	n  map[string]int
}

const maxFailingHosts = 10_000

func (f *failing) fail(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil || len(f.n) >= maxFailingHosts {
		f.n = map[string]int{}
	}
	f.n[host]++
	return f.n[host]
}

func (f *failing) ok(host string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.n, host)
}

// follow applies the crawl's filters and trap defences to a discovered
// URL, counting the reason of a refusal.
func (pl *fetchLoops) follow(lv *live, u *url.URL, canonical string) bool {
	if reason := lv.rules.Skip(u, canonical); reason != "" {
		pl.skips.add(reason)
		pl.metrics.skipped.WithLabelValues(reason).Inc()
		return false
	}
	return true
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
