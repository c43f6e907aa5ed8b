package crawl

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redcrawl/crawler/frontier"
)

// retry defers a transient failure with exponential back-off (or the
// server's Retry-After), and gives up after maxAttempts.
func (pl *fetchLoops) retry(l *frontier.Lease, rec Record, reason string, after time.Duration) {
	item := l.Item
	item.Attempts++
	if pl.cur.Load().s.MaxPages > 0 && pl.pages.Load() >= pl.cur.Load().s.MaxPages {
		// The budget is spent: no retry would be fetched, and the URL would
		// wait in vain, without a record. It ends here.
		rec.Error = fmt.Sprintf("%s (not retried: the page budget is spent)", reason)
		pl.finish(l, rec, frontier.Outcome{Stat: OutcomeFailed, Failed: rec.Error, Fetched: rec.Status != 0})
		return
	}
	if item.Attempts >= pl.maxAttempts {
		rec.Error = fmt.Sprintf("%s (gave up after %d attempts)", reason, item.Attempts)
		pl.finish(l, rec, frontier.Outcome{Stat: OutcomeFailed, Failed: rec.Error, Fetched: rec.Status != 0})
		return
	}
	item.Errors = append(item.Errors[:len(item.Errors):len(item.Errors)], reason)
	pl.log.Debug("will retry", "url", item.URL, "attempt", item.Attempts, "err", reason)
	// Exponential back-off with jitter (between half and one and a half of
	// the step), so URLs that failed together do not all come back
	// together; the server's Retry-After, when longer, wins.
	step := time.Duration(1<<item.Attempts) * 500 * time.Millisecond
	pl.deferItem(l, item, max(after, step/2+rand.N(step)))
}

// lapsed hands l back and says so when this worker no longer surely holds
// it, by the lease's local deadline: the worker was paused (SIGSTOP, a
// frozen VM) or cut off from Redis past it, and the scheduler may have
// given the URL to another worker, who fetches, archives and records it.
// Handed back, it returns to the queue only if Redis still holds it.
func (pl *fetchLoops) lapsed(l *frontier.Lease, when string) bool {
	if !pl.noteLapse(l, "lease lapsed "+when+" (this worker was paused or cut off from Redis); another worker has the URL") {
		return false
	}
	pl.ex.giveBack(l)
	return true
}

// lapsedDuringFetch is lapsed for a lease whose request went out: the
// site saw a try, so the URL goes back as one tried (its attempts up, the
// lapse its error, by retry), not unused. A URL given back unused is not
// one the end of a budgeted crawl records (only those tried are), and one
// whose lease lapses at every fetch would be fetched for ever. Redis still
// decides: a lease it no longer holds (the sweep queued the URL again, as
// tried) defers nothing.
func (pl *fetchLoops) lapsedDuringFetch(l *frontier.Lease, rec Record) bool {
	if !pl.noteLapse(l, "lease lapsed during the fetch: neither archived nor recorded; the URL goes back as tried") {
		return false
	}
	pl.retry(l, rec, "its lease lapsed during the fetch (this worker was paused or cut off from Redis)", 0)
	return true
}

// noteLapse reports whether l may have lapsed by its local deadline, and
// counts and says so (msg) when it has.
func (pl *fetchLoops) noteLapse(l *frontier.Lease, msg string) bool {
	if l.Left() > 0 {
		return false
	}
	pl.counters.Lapsed.Add(1)
	pl.metrics.lapsed.Inc()
	pl.log.Warn(msg, "url", l.Item.URL)
	return true
}

// requeue puts a leased URL back at the front of its host's queue and
// keeps the host from being offered to any worker for wait, in the
// exchanger's next call, which ends the lease.
func (pl *fetchLoops) requeue(l *frontier.Lease, wait time.Duration) {
	pl.counters.PutBack.Add(1)
	pl.ex.putBack(l, frontier.Requeue(wait))
}

// slowDown keeps host's Crawl-delay in its bucket, for every pop, and
// decides l, popped before that: true when it may go now; else it goes
// back through the exchanger (requeue), its host not offered again for
// the delay. (Its lease lost, the put-back is refused: the sweep queued
// the URL again. Redis away: the exchanger sends it once Redis is back.)
func (pl *fetchLoops) slowDown(ctx context.Context, l *frontier.Lease, delay time.Duration) bool {
	now, err := pl.lf.hosts.SetDelay(ctx, l.Host, delay, l)
	if now {
		return true
	}
	if err != nil && !errors.Is(err, frontier.ErrLeaseLost) {
		pl.log.Warn("keeping a host's Crawl-delay failed; its URL goes back, and its next try tells the delay again", "host", l.Host, "url", l.Item.URL, "err", err)
	}
	pl.requeue(l, delay)
	return false
}

// deferItem hands item back to be fetched again after d, in the
// exchanger's next call, which ends the lease.
func (pl *fetchLoops) deferItem(l *frontier.Lease, item frontier.Item, d time.Duration) {
	pl.counters.PutBack.Add(1)
	pb, err := frontier.Retry(item, d)
	if err != nil { // an item the frontier handed out encodes: never here
		pl.log.Warn("cannot defer a URL: it goes back as it was", "url", item.URL, "err", err)
		pb = frontier.Requeue(d)
	}
	pl.ex.putBack(l, pb)
}
