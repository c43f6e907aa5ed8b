package pace

import (
	"math"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// A step is one moment of a scenario: something happens (do, may be nil),
// then the exchanger asks the policy what to do; a call that is made
// succeeds with `popped` URLs unless `fail`.
type step struct {
	at     time.Duration // since the scenario's start
	do     func(p *Policy, now time.Time, pending *int)
	w      World
	want   Call // the call expected, when call is true
	call   bool
	sleep  time.Duration // else: how long it sleeps, at most
	popped int
	due    time.Duration // the reply's NextDue
	fail   bool
}

// added: n entries arrive, one after the other. (The state machine keeps
// the entries; run counts them as it would.)
func added(n int) func(*Policy, time.Time, *int) {
	return func(p *Policy, now time.Time, pending *int) {
		for i := 0; i < n; i++ {
			p.Added(now, *pending == 0)
			*pending++
		}
	}
}
func bell(p *Policy, _ time.Time, _ *int)   { p.Bell() }
func closed(p *Policy, _ time.Time, _ *int) { p.LoopsClosed() }
func wake(msg string, waiting int) func(*Policy, time.Time, *int) {
	return func(p *Policy, _ time.Time, _ *int) { p.Wake(msg, waiting) }
}

func run(t *testing.T, capacity int, steps []step) (*Policy, int) {
	t.Helper()
	p := New(capacity)
	pending := 0
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, s := range steps {
		now := t0.Add(s.at)
		if s.do != nil {
			s.do(p, now, &pending)
		}
		s.w.Pending = pending
		c, ok, until := p.Decide(now, s.w)
		switch {
		case ok != s.call:
			t.Fatalf("step %d (at %v): call=%v %+v, sleep %v; want call=%v %+v", i, s.at, ok, c, until.Sub(now), s.call, s.want)
		case ok && c != s.want:
			t.Fatalf("step %d (at %v): call %+v; want %+v", i, s.at, c, s.want)
		case !ok && until.Sub(now) != s.sleep:
			t.Fatalf("step %d (at %v): sleeps %v; want %v", i, s.at, until.Sub(now), s.sleep)
		}
		if ok && s.fail {
			p.Failed(now)
		} else if ok {
			p.Succeeded(now, c, s.popped, s.due, 0)
			pending -= c.Send
		}
	}
	return p, pending
}

func TestPolicy(t *testing.T) {
	const capacity = 48 // 8 loops
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"the first call fills the buffer", []step{
			{call: true, want: Call{Want: 48}, popped: 48},
			{w: World{Ready: 48}, sleep: time.Hour},
		}},
		{"a finished page waits for company, then a refill rides along", []step{
			{call: true, want: Call{Want: 48}, popped: 48}, // a full pop: pages may linger the long time
			{at: 10 * time.Millisecond, do: added(1), w: World{Ready: 40}, sleep: lingerBusy},
			{at: 200 * time.Millisecond, do: added(1), w: World{Ready: 30}, sleep: lingerBusy - 190*time.Millisecond},
			{at: 510 * time.Millisecond, w: World{Ready: 20}, call: true, want: Call{Send: 2, Want: 28}, popped: 28},
			{at: 520 * time.Millisecond, w: World{Ready: 48}, sleep: time.Hour},
		}},
		{"no more than unsent pages wait, however young: what a kill -9 costs is bounded", []step{
			{call: true, want: Call{Want: 48}, popped: 48},
			{at: 10 * time.Millisecond, do: added(63), w: World{Ready: 40}, sleep: lingerBusy},
			{at: 11 * time.Millisecond, do: added(1), w: World{Ready: 40}, call: true, want: Call{Send: 64, Want: 8}, popped: 8},
		}},
		{"the buffer is refilled only when almost empty", []step{
			{call: true, want: Call{Want: 48}, popped: 48},
			{at: time.Millisecond, w: World{Ready: 7}, sleep: time.Hour},
			{at: 2 * time.Millisecond, w: World{Ready: 6}, call: true, want: Call{Want: 42}, popped: 42}, // 6 = 48/8
		}},
		{"a hungry loop gets the pages sent at once", []step{
			{call: true, want: Call{Want: 48}, popped: 48},
			{at: time.Millisecond, do: added(3), w: World{Ready: 20}, sleep: lingerBusy},
			{at: 2 * time.Millisecond, do: bell, w: World{Ready: 20}, call: true, want: Call{Send: 3, Want: 28}, popped: 28},
		}},
		{"a full batch goes at once, the rest after", []step{
			{call: true, want: Call{Want: 48}, popped: 48},
			{at: time.Millisecond, do: added(maxSend + 6), w: World{Ready: 30}, call: true, want: Call{Send: maxSend, Want: 18}, popped: 18},
			{at: 2 * time.Millisecond, w: World{Ready: 48}, sleep: lingerBusy - time.Millisecond}, // the rest arrived at the call
		}},
		{"a pop that finds nothing makes pages go soon: other workers may starve", []step{
			{call: true, want: Call{Want: 48}, popped: 0, due: -1},
			{at: time.Millisecond, do: added(1), w: World{}, sleep: lingerStarved},
			{at: 11 * time.Millisecond, w: World{}, call: true, want: Call{Send: 1, Want: 48}, popped: 0, due: -1},
		}},
		{"an idle worker asks less and less often, up to once a second", []step{
			{call: true, want: Call{Want: 48}, due: -1},
			{at: time.Millisecond, sleep: 99 * time.Millisecond},
			{at: 100 * time.Millisecond, call: true, want: Call{Want: 48}, due: -1},
			{at: 101 * time.Millisecond, sleep: 199 * time.Millisecond},
			{at: 300 * time.Millisecond, call: true, want: Call{Want: 48}, due: -1},
			{at: 700 * time.Millisecond, call: true, want: Call{Want: 48}, due: -1},
			{at: 1500 * time.Millisecond, call: true, want: Call{Want: 48}, due: -1},
			{at: 1501 * time.Millisecond, sleep: idleMax - time.Millisecond},
		}},
		{"when a host is due soon, it asks then", []step{
			{call: true, want: Call{Want: 48}, due: 30 * time.Millisecond},
			{at: 10 * time.Millisecond, sleep: 20 * time.Millisecond},
			{at: 30 * time.Millisecond, call: true, want: Call{Want: 48}, popped: 1},
		}},
		{"a wake message with a loop waiting ends the idle wait", []step{
			{call: true, want: Call{Want: 48}, due: -1},
			{at: 10 * time.Millisecond, do: wake("1", 1), call: true, want: Call{Want: 48}, popped: 5},
		}},
		{"a wake message with no loop waiting is kept for the next bell", []step{
			{call: true, want: Call{Want: 48}, popped: 48},
			{at: 10 * time.Millisecond, do: wake("1", 0), w: World{Ready: 40}, sleep: time.Hour},
			{at: 20 * time.Millisecond, do: bell, w: World{Ready: 40}, call: true, want: Call{Want: 8}},
		}},
		{"stopping sends everything and pops nothing", []step{
			{call: true, want: Call{Want: 48}, popped: 48},
			{at: time.Millisecond, do: added(5), w: World{Stopping: true}, call: true, want: Call{Send: 5}},
			{at: 2 * time.Millisecond, w: World{Stopping: true}, sleep: time.Hour},
		}},
		{"a failed call backs off, then retries", []step{
			{call: true, want: Call{Want: 48}, popped: 48},
			{at: time.Millisecond, do: added(1), w: World{Ready: 4}, call: true, want: Call{Send: 1, Want: 44}, fail: true},
			{at: 2 * time.Millisecond, w: World{Ready: 4}, sleep: retryMin - time.Millisecond},
			{at: 201 * time.Millisecond, w: World{Ready: 4}, call: true, want: Call{Send: 1, Want: 44}, fail: true},
			{at: 202 * time.Millisecond, w: World{Ready: 4}, sleep: 2*retryMin - time.Millisecond},
			// Past the page's linger, still backing off: it sleeps to the retry, not in 1 ms spins.
			{at: 550 * time.Millisecond, w: World{Ready: 4}, sleep: 51 * time.Millisecond},
			{at: 601 * time.Millisecond, w: World{Ready: 4}, call: true, want: Call{Send: 1, Want: 44}, popped: 44},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, capacity, tc.steps) })
	}
}

// Once the loops are gone, the policy is done when nothing is left to
// send, and gives up after a few failures rather than hold the stop.
func TestPolicyEnds(t *testing.T) {
	p, pending := run(t, 48, []step{
		{call: true, want: Call{Want: 48}, popped: 48},
		{at: time.Millisecond, do: added(2), w: World{Ready: 48}, sleep: lingerBusy},
		{at: 2 * time.Millisecond, do: closed, w: World{Ready: 48}, call: true, want: Call{Send: 2}},
	})
	if !p.Done(pending) {
		t.Fatal("closed with nothing pending: want done")
	}
	p = New(48)
	now := time.Now()
	p.Added(now, true)
	p.LoopsClosed()
	for i := 1; i <= giveUpAfter; i++ {
		if giveUp := p.Failed(now); giveUp != (i == giveUpAfter) {
			t.Fatalf("failure %d: give up = %v", i, giveUp)
		}
	}
}

// A polite crawl's pops come as far apart as its hosts' buckets take to
// fill, within bounds: a host at 5 requests a second with a burst of 1
// must be popped every 200 ms, or it gets fewer than 5.
func TestPopTiming(t *testing.T) {
	for _, c := range []struct {
		rate       float64
		burst      int
		ahead, gap time.Duration
	}{
		{0.5, 1, 550 * time.Millisecond, 500 * time.Millisecond}, // a bucket of 2 s: the longest gap
		{5, 1, 250 * time.Millisecond, 200 * time.Millisecond},
		{5, 2, 450 * time.Millisecond, 400 * time.Millisecond},
		{8, 1, 175 * time.Millisecond, 125 * time.Millisecond},
		{100, 1, 100 * time.Millisecond, 50 * time.Millisecond}, // the shortest gap
	} {
		ahead, gap := PopTiming(c.rate, c.burst)
		if ahead != c.ahead || gap != c.gap {
			t.Errorf("popTiming(%v, %d) = %v, %v; want %v, %v", c.rate, c.burst, ahead, gap, c.ahead, c.gap)
		}
	}
}

// A miss makes the next pops smaller, for a while, at every rate: the
// margin a pop keeps of a token's late window grows by what the latest
// miss missed by, stays within an eighth and a half of the window, fades
// with time, and a pop never asks for more URLs after a miss than it would
// have before.
func TestPolicyMarginAfterAMiss(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rate := math.Exp(rapid.Float64Range(math.Log(0.1), math.Log(1e6)).Draw(t, "lnRate"))
		burst := rapid.IntRange(1, 1000).Draw(t, "burst")
		loops := rapid.IntRange(1, 32).Draw(t, "loops")
		p := New(loops * Prefetch)
		p.ForRate(rate, burst)
		p.call = time.Duration(rapid.Int64Range(int64(100*time.Microsecond), int64(50*time.Millisecond)).Draw(t, "call"))
		p.fast = time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(time.Second)).Draw(t, "fast"))
		p.slow = p.fast + time.Duration(rapid.Int64Range(0, int64(time.Second)).Draw(t, "spread"))
		p.most, p.samples = p.slow, loopSamples
		now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
		w := World{Idle: loops}
		before, margin := p.target(now, w), p.margin(now)
		if margin != p.late/8 {
			t.Fatalf("margin with no miss %v; want an eighth of the window %v", margin, p.late/8)
		}
		miss := time.Duration(rapid.Int64Range(1, int64(2*p.late)+1).Draw(t, "miss"))
		p.MissedWindow(now, miss)
		after := p.margin(now)
		if want := min(p.late/8+miss, p.late/2); after != want {
			t.Fatalf("margin after missing by %v: %v; want %v (window %v)", miss, after, want, p.late)
		}
		if got := p.target(now, w); got > before {
			t.Fatalf("a pop after a miss asks for %d URLs, %d before", got, before)
		}
		p.MissedWindow(now, miss/2) // a smaller miss keeps the larger margin
		if got := p.margin(now); got != after {
			t.Fatalf("a smaller miss changed the margin from %v to %v", after, got)
		}
		later := p.margin(now.Add(missHalfLife))
		if fade := p.late/8 + (after-p.late/8)/2; later > fade+time.Microsecond || later < p.late/8 {
			t.Fatalf("a half-life later the margin is %v; want about %v, not below %v", later, fade, p.late/8)
		}
		if got := p.margin(now.Add(64 * missHalfLife)); got != p.late/8 {
			t.Fatalf("long after the miss the margin is %v; want %v", got, p.late/8)
		}
	})
}
