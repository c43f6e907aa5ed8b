package frontier

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
func (f Rendering) TakeToken(ctx context.Context, host string, horizon time.Duration) (Token, error) {
	sh := f.fs[keyspace.ShardOf(host, len(f.fs))]
	p := f.PolicyNow()
	k := sh.keys
	sent := f.o.now()
	v, err := tokenScript.Run(ctx, sh.c, []string{k.Config, k.Queues, k.Ready, k.Refill, k.Slowed, k.Buckets, k.HostRules, k.Paused},
		f.o.Instance, host, strconv.FormatFloat(p.HostRate, 'f', -1, 64), max(p.HostBurst, 1),
		politeness.LeastWindow.Milliseconds(), horizon.Milliseconds(), boolArg(p.PerAddress), sh.index, sh.shards).Int64Slice()
	switch {
	case keyspace.IsGone(err):
		return Token{}, ErrGone
	case err != nil:
		return Token{}, fmt.Errorf("frontier: host %s: token: %w", host, err)
	case len(v) == 2 && v[0] == 0:
		return Token{}, &NoTokenError{Host: host, Retry: time.Duration(v[1]) * time.Millisecond}
	case len(v) != 4 || v[0] != 1:
		return Token{}, fmt.Errorf("frontier: host %s: token: reply %v", host, v)
	}
	// The slots count from Redis's now, which came after sent: a window
	// placed from sent opens no earlier than Redis meant.
	got := f.o.now()
	t := Token{NotBefore: got.Add(time.Duration(v[2]) * time.Microsecond)}
	if v[3] >= 0 {
		t.Deadline = sent.Add(time.Duration(v[3]) * time.Microsecond)
	}
	return t, nil
}

// boolArg is a flag as a script's argument: "1" or "0".
func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
