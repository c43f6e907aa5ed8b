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
	run := func(from, to int, mode string) ([]Sweep, error) {
		return f.scheduleAll(ctx, from, to, epochKey, epoch, maxAttempts, limit, share, mode)
	}
	sweeps, err := run(0, len(f.fs), sweepReport)
	if err != nil {
		f.end.failed()
		return Sweep{NextDeferred: -1, Records: recordsOf(sweeps)}, err
	}
	total, empty, enqueued, pages := f.addUp(sweeps)
	for sh, sw := range sweeps {
		// Outbox entries no ack came for: their workers died between the
		// calls of a pipeline, or a call of theirs failed. Their links are
		// offered again, and the entries acked.
		if len(sw.outbox) > 0 {
			if err := f.deliver(ctx, sh, sw.outbox); err != nil {
				f.end.failed()
				return total, err
			}
		}
	}
	over, fencedAll := f.end.swept(epoch, empty, enqueued, pages, pageBudget)
	stale := total.Settings > f.PolicyNow().Version
	if stale {
		over = false // its budget may be another now: once the scheduler read the settings, a sweep decides
	}
	// One sweep more that finds the same ends the crawl: it is due now.
	total.Again = empty && !over && !total.CrawlOver
	if over && !total.CrawlOver {
		if err := f.finish(run, &total); err != nil {
			return total, err
		}
	}
	if pageBudget > 0 && !over && fencedAll && !stale {
		if err := f.rebalance(ctx, epochKey, epoch, pageBudget, sweeps); err != nil {
			return total, err
		}
	}
	return total, nil
}

// addUp adds the shards' sweeps up: the sweep to report, whether every
// shard is empty, each shard's count of URLs ever queued, and the pages.
func (f *Frontier) addUp(sweeps []Sweep) (total Sweep, empty bool, enqueued []int64, pages int64) {
	total.NextDeferred, total.Records = -1, recordsOf(sweeps)
	empty = true
	enqueued = make([]int64, len(f.fs))
	for sh, sw := range sweeps {
		total.Released += sw.Released
		total.Revisits += sw.Revisits
		total.Reclaimed += sw.Reclaimed
		total.Failed += sw.Failed
		total.Settings = max(total.Settings, sw.Settings)
		if sh == 0 {
			total.CrawlOver = sw.CrawlOver // the crawl's done flag is the first shard's, set last
		}
		if sw.NextDeferred >= 0 && (total.NextDeferred < 0 || sw.NextDeferred < total.NextDeferred) {
			total.NextDeferred = sw.NextDeferred
		}
		empty = empty && sw.empty
		if !sw.empty {
			total.Busy = append(total.Busy, f.fs[sh].keys.Wake())
		}
		enqueued[sh] = sw.enqueued
		pages += sw.pages
	}
	return total, empty, enqueued, pages
}

// finish ends a crawl found over: first every shard writes its last
// records (with a budget, one for each URL tried and not tried again),
// over as many sweeps as that takes; then the done flags are set, the
// first shard's last: it is the one export and status read, so it must
// not come before any other shard's records.
func (f *Frontier) finish(run func(from, to int, mode string) ([]Sweep, error), total *Sweep) error {
	finishes, err := run(0, len(f.fs), sweepFinish)
	total.Records = append(total.Records, recordsOf(finishes)...)
	if err != nil {
		return err
	}
	for _, sw := range finishes {
		total.Settings = max(total.Settings, sw.Settings)
	}
	for _, sw := range finishes {
		if !sw.CrawlOver {
			total.NextDeferred = 0 // more to write: sweep again soon
			return nil
		}
	}
	// The other shards' flags in one pipeline, then the first's: on a
	// Cluster a pipeline's calls to several masters run in parallel.
	if _, err := run(1, len(f.fs), sweepEnd); err != nil {
		return err
	}
	if _, err := run(0, 1, sweepEnd); err != nil {
		return err
	}
	total.CrawlOver = true
	return nil
}

// scheduleAll sweeps shards [from, to) in mode, in one pipeline (one
// round trip a master), and returns their sweeps (indexed from from) and
// the first error, naming its shard. Every shard's reply is read, an
// error or not: what a shard's scripts wrote stands, and the records in
// the sweeps returned are the ones they wrote.
func (f *Frontier) scheduleAll(ctx context.Context, from, to int, epochKey string, epoch int64, maxAttempts, limit int, share int64, mode string) ([]Sweep, error) {
	pipe := f.c.Pipeline()
	calls := make([]sweepCalls, to-from)
	for i := range calls {
		calls[i] = f.fs[from+i].queueSchedule(ctx, pipe, epochKey, epoch, maxAttempts, limit, share, mode)
	}
	pipe.Exec(ctx) // each call's error is read below
	var again []*fence.Pending
	for _, sweep := range calls {
		for _, p := range sweep {
			if p.NoScript() {
				again = append(again, p)
			}
		}
	}
	if len(again) > 0 && fence.Load(ctx, f.c, again) == nil {
		// Redis had no script: loaded once, the calls go again together.
		pipe = f.c.Pipeline()
		for _, p := range again {
			p.Requeue(ctx, pipe)
		}
		pipe.Exec(ctx)
	}
	out := make([]Sweep, len(calls))
	var first error
	for i, sweep := range calls {
		sw, err := f.fs[from+i].readSchedule(ctx, sweep)
		if err != nil && first == nil {
			first = f.in(from+i, err)
		}
		out[i] = sw
	}
	return out, first
}

// recordsOf is the records sweeps wrote, in shard order.
func recordsOf(sweeps []Sweep) []string {
	var records []string
	for _, sw := range sweeps {
		records = append(records, sw.Records...)
	}
	return records
}

// rebalance moves the page budget's shares towards the shards with work:
// first, when the budget was lowered, what shares hold unused beyond it;
// then what the shares fall short of the budget (a move a crash cut in
// two, or a budget raised), then the shares of shards with nothing queued that they leave
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
	pool := budget - shares // what a move cut short lost, or a budget raised
	// A budget lowered ('crawler set'): the shares give back what they
	// hold unused, any shard's, until their sum is within it again.
	for sh, w := range sw {
		unused := w.allow - w.pages - w.leases
		if pool >= 0 || unused <= 0 {
			continue
		}
		taken, err := f.fs[sh].moveAllowance(ctx, epochKey, epoch, -min(unused, -pool))
		if err != nil {
			return f.in(sh, err)
		}
		pool -= taken // taken is negative
	}
	if len(working) == 0 { // nothing to pop anywhere: only restore what was lost
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

// endWatch is how the scheduler of a crawl over several shards tells that
// the crawl is over, with no I/O (Frontier.Schedule): no script sees every
// shard, so it is over when two whole sweeps in a row found every shard
// empty and no URL was queued at the back of any shard between them (a
// shard's work comes back only through its enqueued counter), or when the
// shards' pages reach the page budget. It also tells whether a whole
// sweep under the current epoch came before this one (every shard fenced
// against an older scheduler), which moving budget shares waits for. A
// table test steps it (shardsweep_test.go).
type endWatch struct {
	lastEmpty    bool    // the last whole sweep found every shard empty
	lastEnqueued []int64 // and each shard's enqueued counter then
	sweptEpoch   int64   // the epoch of the last whole sweep
}

// failed: a sweep that did not finish leaves nothing to compare the next
// one with.
func (e *endWatch) failed() { e.lastEmpty = false }

// swept takes a whole sweep under epoch: whether every shard was empty,
// each shard's enqueued counter and the pages fetched, against the page
// budget (0: none). It says whether the crawl is over, and whether a
// whole sweep under epoch came before this one.
func (e *endWatch) swept(epoch int64, empty bool, enqueued []int64, pages, budget int64) (over, fencedAll bool) {
	same := len(enqueued) == len(e.lastEnqueued)
	for sh := range enqueued {
		same = same && enqueued[sh] == e.lastEnqueued[sh]
	}
	over = empty && e.lastEmpty && same || budget > 0 && pages >= budget
	e.lastEmpty, e.lastEnqueued = empty, enqueued
	fencedAll = e.sweptEpoch == epoch
	e.sweptEpoch = epoch
	return over, fencedAll
}
