package frontier

import (
	"context"

	"github.com/redcrawl/crawler/fence"
)

// Schedule is the leader's sweep, fenced by its epoch: due deferred items
// return to the queue; expired leases return with attempts+1, or go to the
// failed list at maxAttempts. A stale leader's sweep is refused whole
// (fence.ErrFenced). epochKey is the scheduler lock's epoch counter
// (leader.EpochKey of LeaderKey).
//
// With one shard, its script sees the whole crawl and decides whether it
// is over. With more, no script sees the whole crawl, so the crawl is
// over when two sweeps in a row found every shard empty and no URL was
// queued at the back of any shard between them: a shard's work can come
// back only through its enqueued counter (a URL moving from a lease back
// to a queue stays within its shard, which was then not empty). Each shard
// is then ended as a lone one would be: its done flag set, its idle
// workers told.
//
// A page budget is shared out among the shards (each pops only within its
// share: its pages, plus URLs in flight, below it), so that it holds
// exactly without any script seeing every shard: Σ shares ≤ budget always.
// After each sweep, shares a shard with nothing queued leaves unused are
// taken back and given to shards with work, take before give, each move a
// fenced script; what a crash between the two loses, the next sweep gives
// back, once a whole sweep under the current epoch has fenced every shard
// against an older scheduler. The crawl is over when the shards' pages
// reach the budget (every share is then used up, so nothing is in flight).
func (f *Frontier) Schedule(ctx context.Context, epochKey string, epoch int64, maxAttempts, limit int, pageBudget int64) (Sweep, error) {
	if len(f.fs) == 1 { // one script sees the whole crawl, and decides its end
		return f.fs[0].schedule(ctx, epochKey, epoch, maxAttempts, limit, pageBudget, sweepAlone)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	share := int64(0) // the shards' budget argument: -1, their own share
	if pageBudget > 0 {
		share = -1
	}
	var total Sweep
	total.NextDeferred = -1
	empty := true
	var pages int64
	sweeps := make([]Sweep, len(f.fs))
	enqueued := make([]int64, len(f.fs))
	// Every shard's sweep in one pipeline: one round trip (a master).
	pipe := f.c.Pipeline()
	calls := make([]*fence.Pending, len(f.fs))
	for sh, part := range f.fs {
		calls[sh] = part.queueSchedule(ctx, pipe, epochKey, epoch, maxAttempts, limit, share, sweepReport)
	}
	pipe.Exec(ctx) // each call's error is read below
	for sh, part := range f.fs {
		sw, err := part.readSchedule(ctx, calls[sh])
		if err != nil {
			f.lastEmpty = false
			return total, f.in(sh, err)
		}
		sweeps[sh] = sw
		total.Released += sw.Released
		total.Reclaimed += sw.Reclaimed
		total.Failed += sw.Failed
		if sh == 0 {
			total.CrawlOver = sw.CrawlOver // the crawl's done flag is the first shard's, set last
		}
		if sw.NextDeferred >= 0 && (total.NextDeferred < 0 || sw.NextDeferred < total.NextDeferred) {
			total.NextDeferred = sw.NextDeferred
		}
		empty = empty && sw.empty
		if !sw.empty {
			total.Busy = append(total.Busy, part.keys.Wake())
		}
		enqueued[sh] = sw.enqueued
		pages += sw.pages
	}
	for sh, sw := range sweeps {
		// Outbox entries no ack came for: their workers died between the
		// calls of a pipeline, or a call of theirs failed. Their links are
		// offered again, and the entries acked.
		if len(sw.outbox) > 0 {
			if err := f.deliver(ctx, sh, sw.outbox); err != nil {
				f.lastEmpty = false
				return total, err
			}
		}
	}
	same := true
	for sh := range enqueued {
		same = same && enqueued[sh] == f.lastEnqueued[sh]
	}
	over := empty && f.lastEmpty && same || pageBudget > 0 && pages >= pageBudget
	if empty && !over && !total.CrawlOver {
		// One sweep more that finds the same ends the crawl: it is due now.
		total.NextDeferred = 0
	}
	f.lastEmpty, f.lastEnqueued = empty, enqueued
	fencedAll := f.sweptEpoch == epoch // a whole sweep under this epoch came before this one
	f.sweptEpoch = epoch
	if over && !total.CrawlOver {
		// First every shard writes its last records (with a budget, one for
		// each URL tried and not tried again), over as many sweeps as that
		// takes; then the done flags are set, the first shard's last: it is
		// the one export --follow and status read, so it must not come
		// before any other shard's records.
		finished := true
		for sh, part := range f.fs {
			sw, err := part.schedule(ctx, epochKey, epoch, maxAttempts, limit, share, sweepFinish)
			if err != nil {
				return total, f.in(sh, err)
			}
			finished = finished && sw.CrawlOver
		}
		if !finished {
			total.NextDeferred = 0 // more to write: sweep again soon
			return total, nil
		}
		for sh := len(f.fs) - 1; sh >= 0; sh-- {
			if _, err := f.fs[sh].schedule(ctx, epochKey, epoch, maxAttempts, limit, share, sweepEnd); err != nil {
				return total, f.in(sh, err)
			}
		}
		total.CrawlOver = true
	}
	if pageBudget > 0 && !over && fencedAll {
		if err := f.rebalance(ctx, epochKey, epoch, pageBudget, sweeps); err != nil {
			return total, err
		}
	}
	return total, nil
}

// rebalance moves the page budget's shares towards the shards with work:
// first what the shares fall short of the budget (a move a crash cut in
// two), then the shares of shards with nothing queued that they leave
// unused, taken back before they are given.
func (f *Frontier) rebalance(ctx context.Context, epochKey string, epoch, budget int64, sw []Sweep) error {
	var working []int
	var shares int64
	for sh, w := range sw {
		shares += w.allow
		if w.work > 0 {
			working = append(working, sh)
		}
	}
	pool := budget - shares // what a move cut short lost
	if len(working) == 0 {  // nothing to pop anywhere: only restore what was lost
		working = []int{0}
	} else {
		for sh, w := range sw {
			if unused := w.allow - w.pages - w.leases; w.work == 0 && unused > 0 {
				taken, err := f.fs[sh].moveAllowance(ctx, epochKey, epoch, -unused)
				if err != nil {
					return f.in(sh, err)
				}
				pool -= taken // taken is negative
			}
		}
	}
	for i, sh := range working {
		give := pool / int64(len(working)-i)
		if give <= 0 {
			continue
		}
		if _, err := f.fs[sh].moveAllowance(ctx, epochKey, epoch, give); err != nil {
			return f.in(sh, err)
		}
		pool -= give
	}
	return nil
}

// Shares splits a page budget into the shards' first shares, as even as
// can be; the scheduler moves them after.
func Shares(budget int64, shards int) []int64 {
	out := make([]int64, shards)
	for i := range out {
		out[i] = budget / int64(shards)
		if int64(i) < budget%int64(shards) {
			out[i]++
		}
	}
	return out
}
