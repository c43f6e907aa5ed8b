package crawl

import (
	"context"
	"errors"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/redisconn"
)

// flushSkips adds the discovered URLs not followed since the last flush to
// the crawl's counters ("skipped_links:REASON"), in one round trip.
func (w *Worker) flushSkips(ctx context.Context) {
	n := w.skips.take()
	if len(n) == 0 {
		return
	}
	counts := make(map[string]int64, len(n))
	for reason, count := range n {
		counts["skipped_links:"+reason] = count
	}
	if err := w.fr.AddCounts(ctx, counts); err != nil {
		w.log.Warn("counting skipped links failed; counted next time", "err", err)
		for reason, count := range n { // counted next time
			w.skips.addN(reason, count)
		}
	}
}

// heartbeat renews the leases this process holds, keeps it registered as
// alive, and reads the crawl's scope again if seeds added hosts
// (rereadScope), every third of a lease. A crawl that
// is gone (reset, or Redis lost its data) stops the worker.
func (w *Worker) heartbeat(ctx context.Context) {
	t := time.NewTimer(w.opts.Lease / 3)
	defer t.Stop()
	for {
		if err := w.rereadScope(ctx); err != nil && ctx.Err() == nil {
			w.log.Warn("reading the crawl's scope failed; keeping the last one", "err", err)
		}
		w.flushSkips(ctx)
		var leases []*frontier.Lease
		w.held.Range(func(_, l any) bool { leases = append(leases, l.(*frontier.Lease)); return true })
		_, err := w.fr.Registry.Heartbeat(ctx, w.opts.ID, w.Counters.Pages(), leases)
		w.noticeEvictions(ctx, errors.Is(err, frontier.ErrGone))
		if errors.Is(err, frontier.ErrGone) {
			w.end.markGone()
			return
		}
		next := w.opts.Lease / 3
		switch {
		case err == nil || ctx.Err() != nil:
		case redisconn.IsOOM(err):
			// The registration lapses meanwhile; status and reset know to
			// read that as unknown, not gone, while Redis is full.
			w.log.Warn("Redis is out of memory and refuses writes: heartbeats fail, the crawl waits "+
				"(raise maxmemory, or free memory)", "err", err)
			next = min(next, oomRetry)
		default:
			w.log.Warn("heartbeat failed", "err", err)
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
