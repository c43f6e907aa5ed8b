package crawl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/politeness"
)

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
