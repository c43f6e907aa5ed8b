package crawl

// A host that fails or says "not now": a request with no answer is
// retried, and a run of them pauses the host for every worker; a 429 or
// 503 pauses it at once, for the time it asked.

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/events"
)

// fetchFailed is the end of a fetch of host that had no answer: a
// transient failure (a timeout, a reset) is retried, and a run of them
// pauses the host for every worker, as if it had answered 503; any other
// fails the URL.
func (pl *fetchLoops) fetchFailed(ctx context.Context, host string, rec Record, err error) end {
	if !fetch.IsTransient(err) {
		return failed(rec, err.Error(), frontier.Outcome{})
	}
	var after time.Duration
	if pl.failing.fail(host) >= timeoutRun {
		var perr error
		if after, perr = pl.pause(ctx, host, 0, fmt.Sprintf("%d requests in a row failed", timeoutRun)); perr != nil {
			pl.log.Warn("pausing a failing host failed; its URL waits its own back-off only", "host", host, "err", perr)
		}
	}
	return retry(rec, err.Error(), after)
}

// notNow retries a URL answered with a transient status; a 429 or 503,
// the server's "not now", holds for the whole host and every worker: no
// token for it until the pause ends.
func (pl *fetchLoops) notNow(ctx context.Context, host string, rec Record, r *fetch.Result) end {
	after := r.RetryAfter
	if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
		d, err := pl.pause(ctx, host, r.RetryAfter, fmt.Sprintf("a %d", r.Status))
		if err != nil {
			pl.log.Warn("pausing host failed", "host", host, "err", err)
		}
		after = max(after, d)
	}
	return retry(rec, fmt.Sprintf("HTTP %d", r.Status), after)
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

// timeoutRun failed requests in a row pause a host.
const timeoutRun = 3

// failing counts each host's failed requests in a row (no answer at all),
// in this worker; bounded: past maxHosts it starts afresh.
type failing struct {
	mu sync.Mutex
	n  map[string]int
}

const maxFailingHosts = 10_000

func (f *failing) fail(host string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil || len(f.n) >= maxFailingHosts {
		f.n = map[string]int{}
	}
	f.n[host]++
	return f.n[host]
}

func (f *failing) ok(host string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.n, host)
}
