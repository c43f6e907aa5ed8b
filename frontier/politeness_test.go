package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/perhost"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// popN asks for up to n URLs in one exchange.
func popN(t *testing.T, f *frontier.Frontier, n int) frontier.Exchanged {
	t.Helper()
	x, err := f.Exchange(context.Background(), nil, nil, n)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// hostURLs are n URLs of host.
func hostURLs(host string, n int) []frontier.Item {
	var items []frontier.Item
	for i := range n {
		items = append(items, frontier.Item{URL: fmt.Sprintf("http://%s/%d", host, i)})
	}
	return items
}

// A pop hands a host's URLs out only with its bucket's tokens, taken in the
// same call: over a run of pops at chosen moments (miniredis's clock), the
// URLs each pop gets are exactly the events golang.org/x/time/rate allows
// at those moments, burst and refill alike.
func TestPopsTakeTheHostsTokensAsTheOracleAllows(t *testing.T) {
	s := redistest.Mini(t)
	e := setup(t, s)
	e.f.HostRate, e.f.HostBurst = 2, 3
	e.enqueue(t, hostURLs("a", 60))
	oracle := rate.NewLimiter(2, 3)
	at := e.clock
	for i, step := range []time.Duration{0, 0, 100, 400, 499, 1, 250, 2000, 0, 300, 700, 10} {
		e.advance(step * time.Millisecond)
		at = at.Add(step * time.Millisecond)
		want := 0
		for oracle.AllowN(at, 1) {
			want++
		}
		if got := len(popN(t, e.f, 10).Popped); got != want {
			t.Fatalf("pop %d (+%dms): %d URLs; the oracle allows %d", i, step, got, want)
		}
	}
}

// The same with a queue that runs dry between pops: one URL comes at a
// time, so the host leaves ready with each pop and waits in refill with
// its bucket's tat. A URL queued for it brings it back with that tat, so
// each pop gets exactly what the oracle allows of the URLs queued: no
// token early because the queue was empty for a while, none lost.
func TestAHostWhoseQueueRanDryKeepsItsBucket(t *testing.T) {
	s := redistest.Mini(t)
	e := setup(t, s)
	e.f.HostRate, e.f.HostBurst = 2, 3
	oracle := rate.NewLimiter(2, 3)
	at, queued := e.clock, 0
	for i, step := range []time.Duration{0, 0, 0, 0, 100, 400, 0, 499, 1, 2000, 0, 0, 0, 0, 250, 250, 600} {
		e.advance(step * time.Millisecond)
		at = at.Add(step * time.Millisecond)
		e.enqueue(t, []frontier.Item{{URL: fmt.Sprintf("http://a/%d", i)}})
		queued++
		want := 0
		for want < queued && oracle.AllowN(at, 1) {
			want++
		}
		if got := len(popN(t, e.f, 10).Popped); got != want {
			t.Fatalf("pop %d (+%dms, %d queued): %d URLs; the oracle allows %d", i, step, queued, got, want)
		}
		queued -= want
	}
}

// The same on a real server, whose clock runs: at one token an hour and a
// burst of 2, two URLs go, then none, and the host is due in about an
// hour; other hosts are not held up.
func TestAPopTakesTheHostsToken(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst = 1.0/3600, 2
		e.enqueue(t, hostURLs("a", 5))
		if got := len(popN(t, e.f, 5).Popped); got != 2 {
			t.Fatalf("first pop: %d URLs of a; its burst is 2", got)
		}
		x := popN(t, e.f, 5)
		if len(x.Popped) != 0 || x.Info.NextDue < 59*time.Minute {
			t.Fatalf("second pop: %d URLs, next due in %v; want none for about an hour", len(x.Popped), x.Info.NextDue)
		}
		e.enqueue(t, hostURLs("b", 1))
		if l := pop(t, e.f); l == nil || l.Host != "b" {
			t.Fatalf("pop %+v; want b's URL, a waiting for its token", l)
		}
	})
}

// A host paused for every worker (a 429: Limiter.Pause on its bucket) is
// not offered before the pause ends, whatever the rate, none included.
func TestAPausedHostIsNotOffered(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s) // no rate: the pause holds even so
		e.enqueue(t, append(hostURLs("a", 2), hostURLs("b", 1)...))
		if _, err := e.f.Hosts.Pause(ctx, "a", time.Hour, "a test"); err != nil {
			t.Fatal(err)
		}
		x := popN(t, e.f, 3)
		if len(x.Popped) != 1 || x.Popped[0].Host != "b" {
			t.Fatalf("popped %v; want only b's URL, a paused", hosts(x.Popped))
		}
		top, _, err := e.f.Hosts.Queues(ctx, 1)
		if err != nil || len(top) != 1 || top[0].Host != "a" || top[0].DueIn < 59*time.Minute {
			t.Fatalf("host queues %+v (%v); want a due when its pause of an hour ends", top, err)
		}
	})
}

// A pause is one atomic step: a worker that dies (or loses Redis) right
// after its first call to pause a host has paused it for every pop. Before,
// the pause and the mark the pops read (slowed) were two calls, and a
// failure between them left a pause no pop saw.
func TestAPauseIsOneStep(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, append(hostURLs("a", 2), hostURLs("b", 1)...))
		c := s.NewClient(t)
		lost := &firstCallOnly{}
		c.AddHook(lost)
		f, err := frontier.Open(ctx, c, "t", frontier.Options{Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Ping(ctx).Err(); err != nil { // connected: the handshake is not the call that goes through
			t.Fatal(err)
		}
		lost.armed = true
		f.Hosts.Pause(ctx, "a", time.Hour, "a test") // its error, if any, is the lost connection's
		x := popN(t, e.f, 3)
		if len(x.Popped) != 1 || x.Popped[0].Host != "b" {
			t.Fatalf("popped %v; want only b's URL: a was paused by the call that went through", hosts(x.Popped))
		}
	})
}

// firstCallOnly lets through the calls up to the first that succeeds (a
// script's EVALSHA answered NOSCRIPT is sent again as EVAL), and fails
// every one after it, as a connection lost right after it would (once
// armed).
type firstCallOnly struct{ armed, done bool }

func (h *firstCallOnly) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *firstCallOnly) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !h.armed {
			return next(ctx, cmd)
		}
		if h.done {
			return errors.New("connection lost")
		}
		err := next(ctx, cmd)
		h.done = err == nil
		return err
	}
}

func (h *firstCallOnly) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !h.armed {
			return next(ctx, cmds)
		}
		if h.done {
			return errors.New("connection lost")
		}
		err := next(ctx, cmds)
		h.done = err == nil
		return err
	}
}

func hosts(ls []*frontier.Lease) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Host)
	}
	return out
}

// A host's own Crawl-delay, kept in its bucket, holds for every pop: one
// URL, carrying the delay it was popped under, then none for the delay. A
// URL popped before the delay was known: the host's first request goes
// now; the next must go back (its worker's next exchange puts it at the
// front of its queue), due when the bucket has a token at the delay. The
// first must go soon, and the next token counts the delay from the latest
// it may go.
func TestAHostsOwnDelayHoldsForEveryPop(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst = 10, 2
		e.enqueue(t, hostURLs("a", 4))
		early := popN(t, e.f, 2).Popped // under the crawl's rate: its burst of 2
		if len(early) != 2 || early[0].HostDelay != 0 {
			t.Fatalf("popped %d (%+v); want a's burst of 2 under the crawl's rate", len(early), early)
		}
		before := time.Now()
		redisBefore, _ := s.Client.Time(ctx).Result()
		now, err := e.f.Hosts.SetDelay(ctx, "a", time.Hour, early[0])
		if err != nil || !now {
			t.Fatalf("the host's first URL: go now = %v (%v); its grant was the only one", now, err)
		}
		// It goes within FirstRequestWithin of the call, or goes back (its
		// token's window closes then), and a's next token comes a delay
		// after that, not after the call: the two requests are a delay
		// apart however long the first takes to leave.
		if by := early[0].Deadline; by.IsZero() || by.After(before.Add(frontier.FirstRequestWithin)) {
			t.Fatalf("the first URL must go by %v; want within %v of the call", by, frontier.FirstRequestWithin)
		}
		tat, _ := s.Client.ZScore(ctx, keyspace.KeysFor("t").Ready, "a").Result()
		if next := time.UnixMilli(int64(tat)); next.Before(redisBefore.Add(time.Hour + frontier.FirstRequestWithin).Truncate(time.Millisecond)) {
			t.Fatalf("a's next token %v after the call; want a delay after the latest the first may go (%v)", next.Sub(redisBefore), time.Hour+frontier.FirstRequestWithin)
		}
		now, err = e.f.Hosts.SetDelay(ctx, "a", time.Hour, early[1])
		if err != nil || now {
			t.Fatalf("the host's second URL: go now = %v (%v); want it back in its queue", now, err)
		}
		if sz := e.sizes(t); sz.InFlight != 2 {
			t.Fatalf("%d in flight; want both: the decision ends no lease", sz.InFlight)
		}
		putBack(t, e.f, early[1], frontier.Requeue(time.Hour)) // as the crawl does: its next exchange
		if x := popN(t, e.f, 4); len(x.Popped) != 0 || x.Info.NextDue < 59*time.Minute {
			t.Fatalf("popped %d, next due in %v; want nothing of a for the hour", len(x.Popped), x.Info.NextDue)
		}
		if _, err := e.f.Hosts.SetDelay(ctx, "a", 0, nil); err != nil { // robots.txt dropped its delay
			t.Fatal(err)
		}
		e.enqueue(t, hostURLs("b", 1))
		if got := hosts(popN(t, e.f, 4).Popped); len(got) != 1 || got[0] != "b" {
			t.Fatalf("popped %v; want b only: a's bucket is still empty", got)
		}
	})
}

// With a delay of its own, a host gets one URL a pop, which says so.
func TestAPopSaysTheDelayItKeptTo(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s) // no crawl rate at all
		if _, err := e.f.Hosts.SetDelay(context.Background(), "a", time.Hour, nil); err != nil {
			t.Fatal(err)
		}
		e.enqueue(t, hostURLs("a", 3))
		x := popN(t, e.f, 3)
		if len(x.Popped) != 1 || x.Popped[0].HostDelay != time.Hour {
			t.Fatalf("popped %d URLs (%+v); want one, under a's delay of an hour", len(x.Popped), x.Popped)
		}
		if x := popN(t, e.f, 3); len(x.Popped) != 0 {
			t.Fatalf("popped %d more; a waits its hour", len(x.Popped))
		}
	})
}

// Within the window (PopAhead), a host's next token is reserved: its URL
// is popped now and says when to fetch it, one interval later.
func TestAPopReservesTokensDueWithinItsWindow(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 4, 1, 300*time.Millisecond
		e.enqueue(t, hostURLs("a", 3))
		x := popN(t, e.f, 3)
		if len(x.Popped) != 2 {
			t.Fatalf("popped %d; want 2: the token now, and the one due in 250 ms", len(x.Popped))
		}
		first, second := x.Popped[0], x.Popped[1]
		if gap := second.NotBefore.Sub(first.NotBefore); gap < 250*time.Millisecond || gap > 260*time.Millisecond {
			t.Fatalf("the second URL may go %v after the first; want the interval, 250 ms", gap)
		}
	})
}

// Every token whose window opens by the horizon is reserved, not only the
// next one: at 2 000 requests a second a 100 ms horizon holds two hundred
// of a host's tokens. Each URL's window is its token's
// (politeness.TokenWindow): its slot an interval after the last one's,
// open from the slot (a burst of 10 at 2 000/s has no early part: its
// 4.75 ms are under LeastWindow) for 10 ms. A host with no limit gives
// URLs with no window.
func TestAPopGivesEachTokenItsWindow(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 2000, 10, 100*time.Millisecond
		e.enqueue(t, hostURLs("a", 50))
		x := popN(t, e.f, 30)
		if len(x.Popped) != 30 {
			t.Fatalf("popped %d of a's 50; want the 30 wanted, all within the horizon", len(x.Popped))
		}
		for i, l := range x.Popped {
			if w := l.Deadline.Sub(l.NotBefore); w < 9990*time.Microsecond || w > 10010*time.Microsecond {
				t.Fatalf("URL %d: window %v..%v (%v); want 10 ms", i, l.NotBefore, l.Deadline, w)
			}
			if i == 0 {
				continue
			}
			// An interval (500 µs) apart, to the µs the reply counts in.
			if gap := l.NotBefore.Sub(x.Popped[i-1].NotBefore); gap < 499*time.Microsecond || gap > 501*time.Microsecond {
				t.Fatalf("URL %d opens %v after URL %d; want the interval, 500 µs", i, gap, i-1)
			}
		}
		e.f.HostRate = 0
		e.enqueue(t, hostURLs("b", 1))
		if l := pop(t, e.f); l == nil || !l.Deadline.IsZero() {
			t.Fatalf("a URL of a host with no limit: %+v; want one with no window's end", l)
		}
	})
}

// A host whose queue ran dry waits in refill with its bucket: a URL that
// comes for it within its interval is not popped before its token, on a
// real server too.
func TestAURLForAHostThatRanDryWaitsForItsToken(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate = 1.0 / 3600
		e.enqueue(t, hostURLs("a", 1))
		if got := len(popN(t, e.f, 2).Popped); got != 1 {
			t.Fatalf("popped %d; want a's one URL", got)
		}
		e.enqueue(t, []frontier.Item{{URL: "http://a/later"}})
		x := popN(t, e.f, 2)
		if len(x.Popped) != 0 || x.Info.NextDue < 59*time.Minute {
			t.Fatalf("popped %d, next due in %v; a's next token is an hour away", len(x.Popped), x.Info.NextDue)
		}
	})
}

// A URL that made no request (found disallowed, say) gives its token back:
// its host is due again at once, not an interval later.
func TestATokenUnusedGoesBack(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate = 1.0 / 3600
		e.enqueue(t, hostURLs("a", 2))
		l := pop(t, e.f)
		if l == nil || pop(t, e.f) != nil {
			t.Fatal("want one URL of a, then none for an hour")
		}
		finish(t, e.f, l, frontier.Outcome{Stat: "skipped", Refund: true})
		if next := pop(t, e.f); next == nil || next.Host != "a" {
			t.Fatalf("after the refund, pop = %+v; want a's next URL", next)
		}
	})
}

// A host due within the window whose queue ran dry: the pop finds nothing
// to reserve a token for, and says so in a reply that reads (a reply with
// an empty list of waits once failed every exchange of the batch).
func TestAPopOfDryHostsInTheWindowReads(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 4, 1, 300*time.Millisecond
		e.enqueue(t, append(hostURLs("a", 1), hostURLs("b", 1)...))
		// Two wanted: the pop ends there, and a and b stay due in 250 ms.
		if got := len(popN(t, e.f, 2).Popped); got != 2 {
			t.Fatalf("popped %d; want a's and b's one URL each", got)
		}
		if x := popN(t, e.f, 4); len(x.Popped) != 0 {
			t.Fatalf("popped %v from dry queues", hosts(x.Popped))
		}
	})
}

// Adaptive politeness: a finished page's fetch time, times the factor and
// at most MaxDelay, becomes its host's interval for every pop; a fast
// host keeps the crawl's rate. Hosts.Queues says which holds, and why.
func TestASlowHostGetsFewerRequests(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.HostRate, e.f.DelayFactor, e.f.MaxDelay = 10, 2, time.Hour
		e.enqueue(t, append(hostURLs("slow", 3), hostURLs("fast", 3)...))
		x := popN(t, e.f, 2)
		if len(x.Popped) != 2 {
			t.Fatalf("popped %d; want one URL of each host", len(x.Popped))
		}
		var done []frontier.Finished
		for _, l := range x.Popped {
			took := 10 * time.Millisecond
			if l.Host == "slow" {
				took = 45 * time.Minute // times 2: an hour and a half, held to the hour
			}
			done = append(done, frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: "ok", Fetched: true, FetchTime: took}})
		}
		if _, err := e.f.Exchange(ctx, done, nil, 0); err != nil {
			t.Fatal(err)
		}
		top, _, err := e.f.Hosts.Queues(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]perhost.Queue{}
		for _, h := range top {
			got[h.Host] = h
		}
		if h := got["slow"]; h.Interval != time.Hour || h.Why != "adaptive" {
			t.Fatalf("slow: interval %v (%s); want the hour MaxDelay holds it to, adaptive", h.Interval, h.Why)
		}
		if h := got["fast"]; h.Interval != 100*time.Millisecond || h.Why != "rate" {
			t.Fatalf("fast: interval %v (%s); want the rate's 100ms: 2 x 10 ms is less", h.Interval, h.Why)
		}
		if s.Mini == nil {
			return
		}
		e.advance(time.Second) // on miniredis's clock: a second later, fast has a token and slow has not
		if got := hosts(popN(t, e.f, 2).Popped); len(got) != 1 || got[0] != "fast" {
			t.Fatalf("a second later popped %v; want fast only", got)
		}
	})
}

// Without a rate, the pops read the buckets of marked hosts only; a host
// whose pause has ended is offered again and leaves the marks, so they
// stay as few as the hosts slowed now.
func TestAHostLeavesTheSlowedOnceItsPauseEnds(t *testing.T) {
	s := redistest.Mini(t)
	e := setup(t, s)
	ctx := context.Background()
	e.enqueue(t, hostURLs("a", 2))
	if _, err := e.f.Hosts.Pause(ctx, "a", time.Second, "a test"); err != nil {
		t.Fatal(err)
	}
	slowed := keyspace.KeysFor("t").Slowed
	if n, _ := s.Client.HLen(ctx, slowed).Result(); n != 1 {
		t.Fatalf("%d hosts marked slowed; want a", n)
	}
	if l := pop(t, e.f); l != nil {
		t.Fatalf("popped %+v during a's pause", l)
	}
	e.advance(2 * time.Second)
	if l := pop(t, e.f); l == nil || l.Host != "a" {
		t.Fatalf("after the pause, pop = %+v; want a's URL", l)
	}
	if n, _ := s.Client.HLen(ctx, slowed).Result(); n != 0 {
		t.Fatalf("%d hosts still marked slowed after the pause ended", n)
	}
}

// A URL given back unused (too late to fetch, or its worker stopping)
// returns its token with it: popped again at once, not an interval later.
// One whose token is not its host's last goes back without it.
func TestAURLGivenBackReturnsItsToken(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 1.0/3600, 1, 0
		e.enqueue(t, hostURLs("a", 1))
		l := pop(t, e.f)
		if l == nil {
			t.Fatal("want a's URL")
		}
		x, err := e.f.Exchange(context.Background(), nil, []*frontier.Lease{l}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(x.Popped) != 1 || x.Popped[0].Item.URL != l.Item.URL {
			t.Fatalf("after giving it back, popped %v; want %s again at once, with its token", hosts(x.Popped), l.Item.URL)
		}

		e.f.HostRate, e.f.PopAhead = 4, 300*time.Millisecond
		e.enqueue(t, hostURLs("b", 3))
		two := popN(t, e.f, 2) // b's token now, and the next reserved 250 ms ahead
		if len(two.Popped) != 2 {
			t.Fatalf("popped %d; want two of b's URLs", len(two.Popped))
		}
		x, err = e.f.Exchange(context.Background(), nil, two.Popped[:1], 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range x.Popped {
			if gap := p.NotBefore.Sub(two.Popped[1].NotBefore); gap < 200*time.Millisecond && gap > -200*time.Millisecond {
				t.Errorf("a URL of b may go %v from the one reserved ahead; want an interval (250 ms) apart", gap)
			}
		}
	})
}

// A token given back while a later one of its host is reserved: the host's
// next URL does not get that later token's time too, so no two of its
// requests go at once (the refund would have moved the bucket back to the
// reserved token's own time).
func TestATokenGivenBackUnderAReservedOneMakesNoTwin(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 4, 1, 300*time.Millisecond
		e.enqueue(t, hostURLs("a", 3))
		x := popN(t, e.f, 2) // a's token now, and the next reserved 250 ms ahead
		if len(x.Popped) != 2 {
			t.Fatalf("popped %d; want two of a's URLs, the second reserved ahead", len(x.Popped))
		}
		first, reserved := x.Popped[0], x.Popped[1]
		finish(t, e.f, first, frontier.Outcome{Stat: "skipped", Refund: true})
		for _, l := range popN(t, e.f, 2).Popped {
			if gap := l.NotBefore.Sub(reserved.NotBefore); gap < 200*time.Millisecond && gap > -200*time.Millisecond {
				t.Errorf("a URL of a may go %v from the one reserved ahead; want an interval (250 ms) apart", gap)
			}
		}
	})
}
