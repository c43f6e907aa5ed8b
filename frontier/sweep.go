package frontier

import (
	"context"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/fence"
)

// Sweep is what one scheduler pass moved, and whether the crawl is over.
type Sweep struct {
	Released, Reclaimed, Failed int
	CrawlOver                   bool
	// NextDeferred is when the next deferred item is due (-1: none): the
	// scheduler sweeps again then.
	NextDeferred time.Duration
	empty        bool  // nothing queued, leased or deferred in this shard
	enqueued     int64 // URLs ever queued at the back of this shard's queues
	// With a page budget over shards: this shard's pages fetched, URLs in
	// flight, share of the budget, and URLs queued or deferred.
	pages, leases, allow, work int64
}

// The modes of a sweep (schedule.lua's ARGV[8]).
const (
	sweepAlone  = "1"   // the crawl's only shard: the sweep decides whether the crawl is done
	sweepReport = "0"   // a shard of several: report, Shards decides
	sweepEnd    = "end" // Shards decided the crawl is over: end this shard
	// sweepFinish: Shards decided the crawl is over: write this shard's
	// last records, without setting its done flag (CrawlOver: all written).
	sweepFinish = "finish"
)

// fenced runs a fenced script as the scheduler of epoch: against the
// leader's epoch counter, or, for a shard with a Fence key (whose slot the
// counter is not in), against that key (fence.Script.RunRaising).
func (f *shard) fenced(ctx context.Context, s *fence.Script, epochKey string, epoch int64, keys []string, args ...any) (any, error) {
	if f.keys.Fence != "" {
		return s.RunRaising(ctx, f.c, f.keys.Fence, epoch, keys, args...)
	}
	return s.Run(ctx, f.c, epochKey, epoch, keys, args...)
}

// schedule is the sweep, in one of the modes above. pageBudget -1 is
// this shard's share of the budget (Shards).
func (f *shard) schedule(ctx context.Context, epochKey string, epoch int64, maxAttempts, limit int, pageBudget int64, mode string) (Sweep, error) {
	res, err := f.fenced(ctx, scheduleScript, epochKey, epoch,
		[]string{f.keys.Queues, f.keys.Ready, f.keys.Leases, f.keys.Deferred, f.keys.Failed, f.keys.Stats, f.keys.DoneFlag, f.keys.Workers,
			f.keys.Config, f.keys.Results, f.keys.Lengths},
		maxAttempts, limit, failedCap, pageBudget, WorkerForgetAfter.Milliseconds(), f.resultsCap, mode)
	if isGone(err) {
		return Sweep{}, ErrGone
	}
	if err != nil {
		return Sweep{}, fmt.Errorf("frontier: schedule: %w", err)
	}
	v, _ := res.([]any)
	if len(v) != 11 {
		return Sweep{}, fmt.Errorf("frontier: schedule: unexpected reply %v", res)
	}
	n := func(x any) int { i, _ := x.(int64); return int(i) }
	n64 := func(x any) int64 { i, _ := x.(int64); return i }
	return Sweep{Released: n(v[0]), Reclaimed: n(v[1]), Failed: n(v[2]), CrawlOver: n(v[3]) == 1,
		NextDeferred: time.Duration(n(v[4])) * time.Millisecond, empty: n(v[5]) == 1, enqueued: n64(v[6]),
		pages: n64(v[7]), leases: n64(v[8]), allow: n64(v[9]), work: n64(v[10])}, nil
}

// moveAllowance changes this shard's share of the page budget by d (a
// negative d takes back at most what the shard leaves unused), as the
// scheduler of epoch, and returns the change made (allow.lua).
func (f *shard) moveAllowance(ctx context.Context, epochKey string, epoch, d int64) (int64, error) {
	res, err := f.fenced(ctx, allowScript, epochKey, epoch, []string{f.keys.Stats, f.keys.Leases}, d, f.keys.Wake())
	if err != nil {
		return 0, fmt.Errorf("frontier: move the page budget: %w", err)
	}
	moved, _ := res.(int64)
	return moved, nil
}
