package crawl

// A fetch loop's lease, from the pop to its end: whether its URL may be
// fetched now (cleared, admit: the page budget, robots.txt, the host's
// Crawl-delay, the token's window, a pause since the pop), and what
// becomes of it. process (page.go) decides that once, as an end; the
// loop carries it out once (fetchLoops.end), and nothing else ends a
// lease.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/politeness"
)

// An end is what becomes of a leased URL, decided by process and carried
// out by fetchLoops.end. Its zero value ends nothing: the URL goes on
// (see going).
type end struct {
	how  endHow
	rec  Record
	o    frontier.Outcome // finished: the page's outcome
	why  string           // retried: the try's error
	wait time.Duration    // retried: at least; requeued, deferred: how long; missed: how late
	// fatal stops the worker once the URL is back (the archive cannot be
	// written: crawling on would lose what the user asked to keep).
	fatal error
}

type endHow int

const (
	going     endHow = iota // not ended: the URL goes on to its fetch
	finished                // its outcome (a page, a skip, a failure) goes in the next exchange
	retried                 // tried and failed for now: back after a back-off, or failed for good
	requeued                // back at the front of its host's queue, the host held back for wait
	deferred                // back as it was, due after wait (robots.txt not read yet)
	givenBack               // lapsed before its fetch: back unused, if Redis still holds it
	missed                  // its token's window closed: the next exchange asks its host again
)

func finish(rec Record, o frontier.Outcome) end { return end{how: finished, rec: rec, o: o} }
func retry(rec Record, why string, after time.Duration) end {
	return end{how: retried, rec: rec, why: why, wait: after}
}
func requeue(wait time.Duration) end { return end{how: requeued, wait: wait} }

// unarchived is the end of a URL whose archive cannot be written: it
// goes back, and the worker stops (crawling on would lose what the user
// asked to keep).
func unarchived(err error) end { return end{how: requeued, fatal: archiveFailed(err)} }

// archiveFailed is why a worker stops when its archive cannot be written.
func archiveFailed(err error) error {
	return fmt.Errorf("cannot write the WARC archive, stopping: %w", err)
}

// failed is a URL's end for good, its record's error err.
func failed(rec Record, err string, o frontier.Outcome) end {
	rec.Error, o.Stat, o.Failed = err, OutcomeFailed, err
	return finish(rec, o)
}

// ended: e decides the lease (process returns it).
func (e end) ended() bool { return e.how != going }

// cleared decides whether the URL of l may be fetched now: its URL, and
// going; or how it ended (not a URL, past the page budget, its lease
// lapsed, refused by robots.txt, back for the host's Crawl-delay or
// pause, its token's window closed while robots.txt was read).
func (pl *fetchLoops) cleared(ctx context.Context, l *frontier.Lease, info frontier.PopInfo, rec Record) (*url.URL, end) {
	u, err := url.Parse(l.Item.URL)
	s := pl.cur.Load().s
	switch {
	case err != nil || u.Host == "":
		return nil, failed(rec, fmt.Sprintf("not a URL: %v", err), frontier.Outcome{Refund: true})
	case s.MaxPages > 0 && info.Pages >= s.MaxPages:
		return nil, finish(Record{}, frontier.Outcome{Stat: OutcomeSkipped, Refund: true})
	case pl.lapsedBefore(l):
		return nil, end{how: givenBack}
	}
	if e := pl.admit(ctx, l, u, rec); e.ended() {
		return nil, e
	}
	if pl.lapsedBefore(l) { // admit may have waited (robots.txt)
		return nil, end{how: givenBack}
	}
	if late, ok := pl.late(l, true); ok { // admit waited past the token's window: the host's robots.txt came slowly
		return nil, end{how: missed, wait: late}
	}
	if d := pl.pauses.left(u.Host); d > 0 {
		// Paused since the pop (a 429 here or in another worker): the
		// token was reserved before the host said "not now".
		return nil, requeue(d)
	}
	return u, end{}
}

// Politeness at the fetch: the URL came with its host's token (the pop
// took it, docs/design.md "A token per pop"); what is left here is
// robots.txt, the host's Crawl-delay told to its bucket, a token's time
// gone by in a busy worker's buffer, and pausing a host that said "not
// now".

// admit asks robots.txt (the URL came with its host's token: the pop took
// it) and keeps the host's Crawl-delay; it ends the lease when the URL
// may not be fetched (now).
func (pl *fetchLoops) admit(ctx context.Context, l *frontier.Lease, u *url.URL, rec Record) end {
	verdict, err := pl.robots.Check(ctx, u)
	var unavail *politeness.UnavailableError
	giveUp := pl.cur.Load().s.RobotsGiveUp
	switch {
	case errors.As(err, &unavail) && unavail.Since >= giveUp:
		return failed(rec, fmt.Sprintf("robots.txt unreachable: %v (gave up after %v)", unavail, giveUp), frontier.Outcome{Refund: true})
	case errors.As(err, &unavail):
		// RFC 9309: nothing of this host now. Its URLs wait in its queue,
		// not offered to any worker until the shared back-off ends; no
		// attempt is counted.
		return requeue(unavail.Retry)
	case err != nil:
		if !errors.Is(err, politeness.ErrRobotsPending) {
			pl.log.Warn("robots.txt check failed; URL deferred", "host", u.Host, "err", err)
		}
		return end{how: deferred, wait: 2 * time.Second}
	case !verdict.Allowed:
		pl.keepDelay(ctx, l, verdict.CrawlDelay, false) // its bucket learns it even so
		rec.Error = "disallowed by robots.txt"
		return finish(rec, frontier.Outcome{Stat: OutcomeSkipped, Refund: true})
	}
	return pl.keepDelay(ctx, l, verdict.CrawlDelay, true)
}

// keepDelay: the URL of l came with its host's token (the pop took it). A
// Crawl-delay slower than the crawl's rate (or the host's own, when that
// is faster) is the host's own, kept in its bucket for every pop: told
// when a pop did not keep to it yet. With fetch, a URL popped faster than
// that goes back until the bucket has a token at the delay (requeued),
// unless its grant was the host's only one lately.
func (pl *fetchLoops) keepDelay(ctx context.Context, l *frontier.Lease, crawlDelay time.Duration, fetch bool) end {
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
	if delay == l.HostDelay {
		return end{}
	}
	if delay < l.HostDelay || !fetch { // no URL to decide: the bucket learns it
		if _, err := pl.lf.hosts.SetDelay(ctx, l.Host, delay, nil); err != nil {
			pl.log.Warn("keeping a host's Crawl-delay failed", "host", l.Host, "err", err)
		}
		return end{}
	}
	// Kept for every pop, it decides l, popped before: it goes now, or
	// back, its host not offered again for the delay. (Its lease lost, the
	// put-back is refused: the sweep queued the URL again. Redis away: the
	// exchanger sends it once Redis is back.)
	now, err := pl.lf.hosts.SetDelay(ctx, l.Host, delay, l)
	if now {
		return end{}
	}
	if err != nil && !errors.Is(err, frontier.ErrLeaseLost) {
		pl.log.Warn("keeping a host's Crawl-delay failed; its URL goes back, and its next try tells the delay again", "host", l.Host, "url", l.Item.URL, "err", err)
	}
	return requeue(delay)
}

// late reports how late l is when its token's window has closed
// (frontier.Lease.Deadline: politeness.TokenWindow): it waited in this
// worker's ready buffer, or for its host's robots.txt, past the time its
// token was good for. Handed in as missed, the next exchange pops it
// again first (the pop's own rule and horizon, exchange_back.lua's
// ex_again; the old token given back while that is the host's last): a
// host with a token for it gives one and the URL comes back to the ready
// buffer, one of the URLs that call wanted; one without takes it back to
// its queue, its token with it while that is its host's last. A worker
// that falls behind makes fewer requests, never bunched ones, and a late
// URL costs no call of its own.
func (pl *fetchLoops) late(l *frontier.Lease, admitted bool) (time.Duration, bool) {
	now := pl.now()
	if !pastWindow(l, now) {
		return 0, false
	}
	pl.log.Debug("token's window closed: URL handed back to ask its host again", "url", l.Item.URL, "late", now.Sub(l.Deadline),
		"window", l.Deadline.Sub(l.NotBefore), "waited", now.Sub(l.NotBefore), "admitted", admitted)
	return now.Sub(l.Deadline), true
}

// pastWindow: at now, the window of l's token has closed (a URL without
// a token, of a host with no limit, is never past it).
func pastWindow(l *frontier.Lease, now time.Time) bool {
	return !l.Deadline.IsZero() && !now.Before(l.Deadline)
}

// noteLapse reports whether the lease of url may have lapsed by its local
// deadline (held: the lease): the worker was paused (SIGSTOP, a frozen
// VM) or cut off from Redis past it, and the scheduler may have given the
// URL to another worker, who fetches, archives and records it. It counts
// and says so (msg) when it has.
func (pl *fetchLoops) noteLapse(held holder, url, msg string) bool {
	if held.Left() > 0 {
		return false
	}
	pl.counters.Lapsed.Add(1)
	pl.metrics.lapsed.Inc()
	pl.log.Warn(msg, "url", url)
	return true
}

// lapsedBefore: the lease of l lapsed before its request went out: the
// URL goes back unused, in its queue again if Redis still holds the lease.
func (pl *fetchLoops) lapsedBefore(l *frontier.Lease) bool {
	return pl.noteLapse(l, l.Item.URL, "lease lapsed before the fetch (this worker was paused or cut off from Redis): not fetched; another worker has the URL")
}

// lapsedDuringFetch: the lease of p lapsed while its request was out (or
// its page rendered). The site saw a try, so the URL goes back as one
// tried (its attempts up, the lapse its error), not unused: a URL given
// back unused is not one the end of a budgeted crawl records (only those
// tried are), and one whose lease lapses at every fetch would be fetched
// for ever. Redis still decides: a lease it no longer holds (the sweep
// queued the URL again, as tried) defers nothing.
func (pl *fetchLoops) lapsedDuringFetch(p page, rec Record) end {
	if !pl.noteLapse(p.held, p.URL, "lease lapsed during the fetch: neither archived nor recorded; the URL goes back as tried") {
		return end{}
	}
	return retry(rec, "its lease lapsed during the fetch (this worker was paused or cut off from Redis)", 0)
}

// end carries out what process decided for l, handing it to the
// exchanger, whose next call ends the lease (the heartbeat renews it
// until then).
func (pl *fetchLoops) end(l *frontier.Lease, e end) {
	switch e.how {
	case going: // process never returns it
		pl.log.Error("a lease ended without an end: handed back", "url", l.Item.URL)
		pl.ex.giveBack(l)
	case givenBack:
		pl.ex.giveBack(l) // back in its queue only if Redis still holds it
	case missed:
		pl.ex.missed(l, e.wait)
	case requeued:
		pl.counters.PutBack.Add(1)
		pl.ex.putBack(l, frontier.Requeue(e.wait))
	case deferred:
		pl.putBack(l, l.Item, e.wait)
	case retried:
		pl.retry(l, e)
	case finished:
		pl.finish(l, e.rec, e.o)
	}
	if e.fatal != nil {
		pl.fail(e.fatal)
	}
}

// retry defers a transient failure with exponential back-off (or the
// server's Retry-After), and gives up after maxAttempts, or at once when
// the page budget is spent: no retry would be fetched, and the URL would
// wait in vain, without a record.
func (pl *fetchLoops) retry(l *frontier.Lease, e end) {
	item := l.Item
	item.Attempts++
	o := frontier.Outcome{Fetched: e.rec.Status != 0}
	s := pl.cur.Load().s
	switch {
	case s.MaxPages > 0 && pl.pages.Load() >= s.MaxPages:
		pl.end(l, failed(e.rec, fmt.Sprintf("%s (not retried: the page budget is spent)", e.why), o))
		return
	case item.Attempts >= pl.maxAttempts:
		pl.end(l, failed(e.rec, fmt.Sprintf("%s (gave up after %d attempts)", e.why, item.Attempts), o))
		return
	}
	item.Errors = append(item.Errors[:len(item.Errors):len(item.Errors)], e.why)
	pl.log.Debug("will retry", "url", item.URL, "attempt", item.Attempts, "err", e.why)
	// Exponential back-off with jitter (between half and one and a half of
	// the step), so URLs that failed together do not all come back
	// together; the server's Retry-After, when longer, wins.
	step := time.Duration(1<<item.Attempts) * 500 * time.Millisecond
	pl.putBack(l, item, max(e.wait, step/2+rand.N(step)))
}

// putBack hands item back to be fetched again after d.
func (pl *fetchLoops) putBack(l *frontier.Lease, item frontier.Item, d time.Duration) {
	pl.counters.PutBack.Add(1)
	pb, err := frontier.Retry(item, d)
	if err != nil { // an item the frontier handed out encodes: never here
		pl.log.Warn("cannot defer a URL: it goes back as it was", "url", item.URL, "err", err)
		pb = frontier.Requeue(d)
	}
	pl.ex.putBack(l, pb)
}

// finish hands a page's outcome to the exchanger, which sends it with
// others in one exchange.
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
