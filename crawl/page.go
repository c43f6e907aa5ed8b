package crawl

import (
	"context"
	"log/slog"
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
	// rescope reads the crawl's scope again when seeds added hosts
	// (Worker.rereadScope).
	rescope func(context.Context) error
	// memo: the canonical forms of the links the worker's pages had,
	// shared by its loops (a site's pages repeat their links).
	memo *parse.Memo
	// login: the crawl's login (seed --login-url), nil without one.
	login *login
}

// loop is fetch goroutine i: each URL it takes is decided once (process:
// an end) and ended once (fetchLoops.end, lease.go).
func (pl *fetchLoops) loop(stop, work context.Context, i int) {
	for {
		l, ok := pl.ex.take(stop, i)
		if !ok {
			return
		}
		start := pl.now()
		late, closed := pl.late(l.lease, false) // its token's window closed while it waited here
		e := end{how: missed, wait: late}
		if !closed {
			e = pl.process(work, l.lease, l.info)
		}
		pl.end(l.lease, e)
		pl.ex.worked(i, pl.now().Sub(start), !closed)
	}
}

// process decides what becomes of one leased URL: cleared to go now
// (lease.go), fetched, and its answer read (read.go) to an outcome; or
// put back, retried or failed on the way.
func (pl *fetchLoops) process(ctx context.Context, l *frontier.Lease, info frontier.PopInfo) end {
	item := l.Item
	rec := Record{URL: item.URL, Depth: item.Depth, Worker: pl.worker, FetchedAt: time.Now().UTC(),
		Parent: item.Parent, Attempt: item.Attempts + 1, PreviousErrors: item.Errors}
	u, e := pl.cleared(ctx, l, info, rec)
	if e.ended() {
		return e
	}
	gen, e := pl.beforeFetch(ctx, u, rec)
	if e.ended() {
		return e
	}
	start := time.Now()
	rec.FetchedAt = start.UTC() // after the politeness waits: when the request went out
	p := page{Item: item, url: u, visit: recrawl.Decode(item.V), held: l, start: start}
	r, err := pl.fetchOf(p)(ctx, p.URL)
	rec.FetchMS = time.Since(start).Milliseconds()
	if err != nil {
		return pl.fetchFailed(ctx, u.Host, rec, err)
	}
	pl.counters.Requests.Add(1)
	if e := pl.lapsedDuringFetch(p, rec); e.ended() {
		return e
	}
	if e := pl.afterFetch(ctx, u, gen, r, rec); e.ended() {
		return e
	}
	pl.failing.ok(u.Host)
	pl.metrics.bytes.Add(float64(r.Bytes))
	pl.metrics.fetch.Observe(r.Duration.Seconds())
	rec.Status, rec.Proto, rec.ContentType, rec.Bytes, rec.Truncated, rec.Headers = r.Status, r.Proto, r.ContentType, r.Bytes, r.Truncated, r.Headers
	rec.DroppedBody = r.DroppedBody
	return pl.read(ctx, p, r, rec)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
