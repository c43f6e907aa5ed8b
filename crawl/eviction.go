package crawl

import (
	"context"
	"time"

	"github.com/redcrawl/crawler/redisconn"
	"github.com/redis/go-redis/v9"
)

// evictionWatch notices keys evicted while the worker runs: each one may
// be a URL, a record or the crawl's lock lost.
type evictionWatch struct {
	last int64     // evicted_keys when last read; -1: the server does not say
	at   time.Time // when
}

// check reads evicted_keys and reports how many more than last time.
func (e *evictionWatch) check(ctx context.Context, c redis.UniversalClient) (int64, error) {
	if e.last < 0 {
		return 0, nil
	}
	n, err := redisconn.EvictedKeys(ctx, c)
	if err != nil || n < 0 {
		return 0, err
	}
	more := n - e.last
	e.last = n
	return max(more, 0), nil
}

// noticeEvictions, called by the heartbeat, says loudly (error level) when
// Redis evicted keys since the last look, at most every EvictionCheck
// (always when final: the crawl is gone, was it evicted?).
func (w *Worker) noticeEvictions(ctx context.Context, final bool) {
	if !final && w.now().Sub(w.evictions.at) < w.opts.EvictionCheck {
		return
	}
	w.evictions.at = w.now()
	more, err := w.evictions.check(ctx, w.c)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("reading Redis's evicted_keys failed", "err", err)
		}
		return
	}
	if more > 0 {
		w.evicted.Add(more)
		w.metrics.evicted.Add(float64(more))
		w.log.Error("Redis evicted keys during the crawl: URLs, records or the crawl's lock may be lost; "+
			"set maxmemory-policy noeviction (or give Redis more memory)", "evicted", more)
	}
}
