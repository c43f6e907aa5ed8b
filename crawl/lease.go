package crawl

// A fetch loop's lease, from the pop to its end, in one place: whether
// its URL may be fetched now (cleared, admit: the page budget, robots.txt,
// the host's Crawl-delay, the token's window, a pause since the pop), and
// how the lease ends: finished with its outcome (finish), or put back,
// retried, deferred or found lapsed. process (page.go) reads the page in
// between.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/politeness"
)

// cleared reports whether the URL of l may be fetched now, with its URL:
// a URL, within the page budget, its lease still held, allowed by its
// host's robots.txt and filters, within its token's window and its host
// not paused since the pop. When not, the lease was ended (finished,
// given back or put back) here.
func (pl *fetchLoops) cleared(ctx context.Context, l *frontier.Lease, info frontier.PopInfo, rec *Record) (*url.URL, bool) {
	u, err := url.Parse(l.Item.URL)
	if err != nil || u.Host == "" {
		rec.Error = fmt.Sprintf("not a URL: %v", err)
		pl.finish(l, *rec, frontier.Outcome{Stat: OutcomeFailed, Failed: rec.Error, Refund: true})
		return nil, false
	}
	if pl.cur.Load().s.MaxPages > 0 && info.Pages >= pl.cur.Load().s.MaxPages {
		pl.finish(l, Record{}, frontier.Outcome{Stat: OutcomeSkipped, Refund: true})
		return nil, false
	}
	if pl.lapsed(l, "before the fetch: not fetched") || !pl.admit(ctx, l, u, rec) {
		return nil, false
	}
	if pl.lapsed(l, "before the fetch: not fetched") { // admit may have waited (robots.txt)
		return nil, false
	}
	if pl.late(l, true) { // admit waited past the token's window: the host's robots.txt came slowly
		return nil, false
	}
	if d := pl.pauses.left(u.Host); d > 0 {
		// Paused since the pop (a 429 here or in another worker): the
		// token was reserved before the host said "not now".
		pl.requeue(l, d)
		return nil, false
	}
	return u, true
}

// Politeness at the fetch: the URL came with its host's token (the pop
// took it, docs/design.md "A token per pop"); what is left here is
// robots.txt, the host's Crawl-delay told to its bucket, a token's time
// gone by in a busy worker's buffer, and pausing a host that said "not
// now".

// admit asks robots.txt (the URL came with its host's token: the pop took
// it) and keeps the host's Crawl-delay. When the URL may not be fetched
// (now), it has already been settled — finished, requeued or deferred —
// and admit returns false.
func (pl *fetchLoops) admit(ctx context.Context, l *frontier.Lease, u *url.URL, rec *Record) bool {
	verdict, err := pl.robots.Check(ctx, u)
	var unavail *politeness.UnavailableError
	switch {
	case errors.As(err, &unavail) && unavail.Since >= pl.cur.Load().s.RobotsGiveUp:
		rec.Error = fmt.Sprintf("robots.txt unreachable: %v (gave up after %v)", unavail, pl.cur.Load().s.RobotsGiveUp)
		pl.finish(l, *rec, frontier.Outcome{Stat: OutcomeFailed, Failed: rec.Error, Refund: true})
		return false
	case errors.As(err, &unavail):
		// RFC 9309: nothing of this host now. Its URLs wait in its queue,
		// not offered to any worker until the shared back-off ends; no
		// attempt is counted.
		pl.requeue(l, unavail.Retry)
		return false
	case err != nil:
		if !errors.Is(err, politeness.ErrRobotsPending) {
			pl.log.Warn("robots.txt check failed; URL deferred", "host", u.Host, "err", err)
		}
		pl.deferItem(l, l.Item, 2*time.Second)
		return false
	case !verdict.Allowed:
		pl.keepDelay(ctx, l, verdict.CrawlDelay, false) // its bucket learns it even so
		rec.Error = "disallowed by robots.txt"
		pl.finish(l, *rec, frontier.Outcome{Stat: OutcomeSkipped, Refund: true})
		return false
	}
	return pl.keepDelay(ctx, l, verdict.CrawlDelay, true)
}

// keepDelay: the URL of l came with its host's token (the pop took it). A
// Crawl-delay slower than the crawl's rate (or the host's own, when that
// is faster) is the host's own, kept in its
// bucket for every pop: told when a pop did not keep to it yet. With fetch,
// a URL popped faster than that goes back until the bucket has a token at
// the delay (false), unless its grant was the host's only one lately.
func (pl *fetchLoops) keepDelay(ctx context.Context, l *frontier.Lease, crawlDelay time.Duration, fetch bool) bool {
	// Weighed against the faster of the crawl's rate and the host's own
	// (crawler host), so that the delay holds whichever rate the host has
	// later (its own rule cleared, or set).
	rate := pl.cur.Load().s.Rate
	if l.HasOwnRate {
		own := l.OwnRate
		if own == 0 {
			own = math.Inf(1)
		}
		rate = max(rate, own)
	}
	delay := time.Duration(0)
	if crawlDelay > 0 && float64(politeness.Every(crawlDelay)) < rate {
		delay = crawlDelay
	}
	switch {
	case delay == l.HostDelay:
		return true
	case delay < l.HostDelay || !fetch: // no URL to decide: the bucket learns it
		if _, err := pl.lf.hosts.SetDelay(ctx, l.Host, delay, nil); err != nil {
			pl.log.Warn("keeping a host's Crawl-delay failed", "host", l.Host, "err", err)
		}
		return true
	}
	return pl.slowDown(ctx, l, delay)
}

// pause stops host for every worker (frontier.Frontier.Hosts.Pause: its
// bucket, which the pops read) and announces it, for the URLs already
// popped with a token reserved ahead.
func (pl *fetchLoops) pause(ctx context.Context, host string, retryAfter time.Duration, why string) (time.Duration, error) {
	d, err := pl.lf.hosts.Pause(ctx, host, retryAfter, why)
	if err != nil {
		return 0, err
	}
	LogEvent(ctx, pl.lf.events, pl.log, events.Event{Kind: events.Pause, Worker: pl.worker,
		Text: fmt.Sprintf("host %s paused %v for every worker, after %s", host, d.Round(100*time.Millisecond), why)})
	if err := pl.pauses.announce(ctx, host, d); err != nil {
		pl.log.Warn("announcing a host's pause failed; URLs already popped may still go during it", "host", host, "err", err)
	}
	return d, nil
}

// late hands l to the exchanger when its token's window has closed
// (frontier.Lease.Deadline: politeness.TokenWindow): it waited in this
// worker's ready buffer, or for its host's robots.txt, past the time its
// token was good for. The next exchange pops it again first (the pop's
// own rule and horizon, exchange_back.lua's ex_again; the old token
// given back while that is the host's last): a host with a token for it
// gives one and the URL comes back to the ready buffer, one of the URLs
// that call wanted; one without takes it back to its queue, its token
// with it while that is its host's last. A worker that falls behind
// makes fewer requests, never bunched ones, and a late URL costs no call
// of its own.
func (pl *fetchLoops) late(l *frontier.Lease, admitted bool) bool {
	now := pl.now()
	if !pastWindow(l, now) {
		return false
	}
	pl.log.Debug("token's window closed: URL handed back to ask its host again", "url", l.Item.URL, "late", now.Sub(l.Deadline),
		"window", l.Deadline.Sub(l.NotBefore), "waited", now.Sub(l.NotBefore), "admitted", admitted)
	pl.ex.missed(l, now.Sub(l.Deadline))
	return true
}

// pastWindow: at now, the window of l's token has closed (a URL without
// a token, of a host with no limit, is never past it).
func pastWindow(l *frontier.Lease, now time.Time) bool {
	return !l.Deadline.IsZero() && !now.Before(l.Deadline)
}

// fetchFailed ends a fetch that had no answer: a transient failure (a
// timeout, a reset) is retried, and a run of them pauses the host for
// every worker, as if it had answered 503; any other fails the URL.
func (pl *fetchLoops) fetchFailed(ctx context.Context, l *frontier.Lease, u *url.URL, rec Record, err error) {
	if !fetch.IsTransient(err) {
		rec.Error = err.Error()
		pl.finish(l, rec, frontier.Outcome{Stat: OutcomeFailed, Failed: rec.Error})
		return
	}
	var after time.Duration
	if pl.failing.fail(u.Host) >= timeoutRun {
		var perr error
		if after, perr = pl.pause(ctx, u.Host, 0, fmt.Sprintf("%d requests in a row failed", timeoutRun)); perr != nil {
			pl.log.Warn("pausing a failing host failed; its URL waits its own back-off only", "host", u.Host, "err", perr)
		}
	}
	pl.retry(l, rec, err.Error(), after)
}

// notNow retries a URL answered with a transient status; a 429 or 503,
// the server's "not now", holds for the whole host and every worker: no
// token for it until the pause ends.
func (pl *fetchLoops) notNow(ctx context.Context, l *frontier.Lease, u *url.URL, rec Record, r *fetch.Result) {
	after := r.RetryAfter
	if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
		d, err := pl.pause(ctx, u.Host, r.RetryAfter, fmt.Sprintf("a %d", r.Status))
		if err != nil {
			pl.log.Warn("pausing host failed", "host", u.Host, "err", err)
		}
		after = max(after, d)
	}
	pl.retry(l, rec, fmt.Sprintf("HTTP %d", r.Status), after)
}

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

// finish hands a page's outcome to the exchanger, which sends it with
// others in one exchange; the lease stays held (the heartbeat renews it)
// until then.
func (pl *fetchLoops) finish(l *frontier.Lease, rec Record, o frontier.Outcome) {
	if o.Stat == OutcomeFailed && o.Visit == nil {
		o.Visit, o.Due = keptVisit(l.Item) // tried again when next due
	}
	pl.counters.count(o.Stat)
	o.Status = rec.Status // counted per status code, crawl-wide ("status:404")
	if o.Stat == OutcomeFailed {
		pl.log.Warn("page failed", "url", l.Item.URL, "attempt", rec.Attempt, "err", o.Failed)
	}
	pl.metrics.pages.WithLabelValues(o.Stat, statusClass(rec.Status)).Inc()
	if rec.Change != "" {
		pl.metrics.changes.WithLabelValues(rec.Change).Inc()
	}
	if rec.URL != "" {
		rec.Outcome = o.Stat
		b, err := json.Marshal(rec)
		if err != nil {
			pl.log.Error("encoding record failed", "url", rec.URL, "err", err)
		}
		o.Record = b
	}
	pl.ex.finish(frontier.Finished{Lease: l, Outcome: o}, rec)
}
