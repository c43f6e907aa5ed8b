package rendering

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/politeness"
)

var (
	tokenScript = lua.Script("token")
)

// Token is one token of a host's bucket taken outside a pop (TakeToken):
// its request may go from NotBefore until before Deadline (zero: no end).
type Token struct {
	NotBefore, Deadline time.Time
}

// NoTokenError says a host has no token within the horizon asked (its
// bucket is spent that far ahead, it is paused or blocked, or the crawl
// is paused): ask again after Retry.
type NoTokenError struct {
	Host  string
	Retry time.Duration
}

func (e *NoTokenError) Error() string {
	return fmt.Sprintf("frontier: host %s has no token within the horizon; next in %v", e.Host, e.Retry)
}

// TakeToken takes one token of host's bucket by the pops' own rule (the
// crawl's rate, or the host's own, its Crawl-delay, adaptive interval and
// pause) for a request that is no popped URL's, a rendered page's
// subresource: a token whose window opens within horizon, or a
// *NoTokenError. The host's next pop waits for the token as it would for
// one a pop took.
func (f Shared) TakeToken(ctx context.Context, host string, horizon time.Duration) (Token, error) {
	i, k := f.For(host)
	p := f.Pace()
	sent := f.Now()
	v, err := tokenScript.Run(ctx, f.C, []string{k.Config, k.Queues, k.Ready, k.Refill, k.Slowed, k.Buckets, k.HostRules, k.Paused},
		f.Instance, host, strconv.FormatFloat(p.HostRate, 'f', -1, 64), max(p.HostBurst, 1),
		politeness.LeastWindow.Milliseconds(), horizon.Milliseconds(), keyspace.Flag(p.PerAddress), i, len(f.Keys)).Int64Slice()
	switch {
	case keyspace.IsGone(err):
		return Token{}, keyspace.ErrGone
	case err != nil:
		return Token{}, fmt.Errorf("frontier: host %s: token: %w", host, err)
	case len(v) == 2 && v[0] == 0:
		return Token{}, &NoTokenError{Host: host, Retry: time.Duration(v[1]) * time.Millisecond}
	case len(v) != 4 || v[0] != 1:
		return Token{}, fmt.Errorf("frontier: host %s: token: reply %v", host, v)
	}
	// The slots count from Redis's now, which came after sent: a window
	// placed from sent opens no earlier than Redis meant.
	got := f.Now()
	t := Token{NotBefore: got.Add(time.Duration(v[2]) * time.Microsecond)}
	if v[3] >= 0 {
		t.Deadline = sent.Add(time.Duration(v[3]) * time.Microsecond)
	}
	return t, nil
}
