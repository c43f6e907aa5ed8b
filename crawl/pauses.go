package crawl

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// pauses is what this worker knows of the hosts paused for every worker
// (a 429 or 503, a run of failures: politeness.Limiter.Pause on the
// host's bucket): its own, and the others' as they announce them on the
// crawl's pause channel. A pop never hands out a paused host's URL, but
// one popped before the pause with its token reserved ahead
// (frontier.Options.PopAhead) is checked here before its fetch, so that
// nothing reaches a host after it said "not now".
type pauses struct {
	c       redis.UniversalClient
	channel string           // the crawl's pause channel (frontier.Frontier.PauseChannel)
	now     func() time.Time // the worker's clock (Options.Clock)
	mu      sync.Mutex
	m       map[string]time.Time // host -> end of its pause, on now
}

// maxPauses bounds the hosts remembered; expired ones go first.
const maxPauses = 10000

func newPauses(c redis.UniversalClient, channel string, now func() time.Time) *pauses {
	return &pauses{c: c, channel: channel, now: now, m: map[string]time.Time{}}
}

// set records that host is paused for d from now.
func (p *pauses) set(host string, d time.Duration) {
	now := p.now()
	until := now.Add(d)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= maxPauses {
		for h, t := range p.m {
			if !t.After(now) {
				delete(p.m, h)
			}
		}
		if len(p.m) >= maxPauses {
			return // ten thousand hosts paused at once: the pops still hold them
		}
	}
	if until.After(p.m[host]) {
		p.m[host] = until
	}
}

// left is how long host stays paused (0: not paused).
func (p *pauses) left(host string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.m[host]
	if !ok {
		return 0
	}
	d := t.Sub(p.now())
	if d <= 0 {
		delete(p.m, host)
		return 0
	}
	return d
}

// lift forgets host's pause: it was cleared.
func (p *pauses) lift(host string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, host)
}

// announce tells the other workers that host is paused for d; a d of 0
// lifts its pause (crawler host --clear).
func (p *pauses) announce(ctx context.Context, host string, d time.Duration) error {
	if d <= 0 {
		p.lift(host)
		d = 0
	} else {
		p.set(host, d)
	}
	return p.c.Publish(ctx, p.channel, announcement(host, d)).Err()
}

// announcement is the message that says host is paused for d (0: its
// pause lifted), "host ms", as heard reads it.
func announcement(host string, d time.Duration) string {
	return host + " " + strconv.FormatInt(max(d, 0).Milliseconds(), 10)
}

// heard records an announcement ("host ms", "host 0" for a lift); false
// when it is not one.
func (p *pauses) heard(payload string) bool {
	host, ms, ok := strings.Cut(payload, " ")
	n, err := strconv.ParseInt(ms, 10, 64)
	switch {
	case !ok || err != nil || host == "" || n < 0:
		return false
	case n == 0:
		p.lift(host)
	default:
		p.set(host, time.Duration(n)*time.Millisecond)
	}
	return true
}

// AnnouncePause tells every worker listening on channel (a frontier's
// PauseChannel) that host is paused for d from now, 0 lifting its pause:
// what crawler host says to the workers.
func AnnouncePause(ctx context.Context, c redis.UniversalClient, channel, host string, d time.Duration) error {
	return c.Publish(ctx, channel, announcement(host, d)).Err()
}
