package crawl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/pace"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/control"
	"pgregory.net/rapid"
)

// The exchanger's state machine, step by step on a fake clock: each step is
// an event at a moment, and the actions it must give, written out
// (describe). A call's reply is the next step's event (replied).

// xstep is one event and the actions it must give.
type xstep struct {
	at   time.Duration
	ev   event
	want string // the actions, described, "; "-separated
}

// lease is a lease on host; its id names it in the descriptions.
func lease(id, host string) *frontier.Lease { return &frontier.Lease{ID: id, Host: host} }

var (
	pa1, pa2, pa3 = lease("a1", "a"), lease("a2", "a"), lease("a3", "a")
	pb1           = lease("b1", "b")
)

func handedIn(l *frontier.Lease) event {
	return event{kind: evHandedIn, entry: entry{page: frontier.Finished{Lease: l}}}
}
func back(l *frontier.Lease) event { return event{kind: evHandedIn, entry: entry{back: l}} }
func tick(ready int, unstarted ...*frontier.Lease) event {
	return event{kind: evTick, ready: ready, unstarted: unstarted}
}

// replied is the reply to a call that sent leases (in order) and wanted
// want: popped URLs, or err.
func replied(want int, popped int, err error, sent ...*frontier.Lease) event {
	r := reply{want: want, err: err}
	for _, l := range sent {
		r.batch = append(r.batch, entry{page: frontier.Finished{Lease: l}})
	}
	for i := 0; i < popped; i++ {
		r.res.Popped = append(r.res.Popped, lease(fmt.Sprint("new", i), "a"))
	}
	r.res.Info.NextDue = -1
	return event{kind: evReplied, reply: r}
}

// over is a reply that says the crawl is over.
func over(e event) event { e.reply.res.Info.CrawlOver = true; return e }

// describe writes the actions out.
func describe(acts []action, now time.Time) string {
	var out []string
	for _, a := range acts {
		switch a.kind {
		case actCall:
			var ids []string
			for _, e := range a.batch {
				id := e.lease().ID
				if e.back != nil {
					id = "back:" + id
				}
				ids = append(ids, id)
			}
			out = append(out, fmt.Sprintf("call [%s] want %d", strings.Join(ids, " "), a.want))
		case actSleep:
			out = append(out, fmt.Sprintf("sleep %v", a.until.Sub(now)))
		default:
			out = append(out, map[actKind]string{actWoken: "woken " + a.channel, actSettle: "settle", actForget: "forget",
				actResend: "resend", actRetry: "retry", actWarn: "warn", actCrawlDone: "crawl done", actMarkGone: "mark gone",
				actGiveUp: "give up", actDiscard: "discard", actEnd: "end"}[a.kind])
		}
	}
	return strings.Join(out, "; ")
}

func runMachine(t *testing.T, s *exState, steps []xstep) {
	t.Helper()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for i, st := range steps {
		now := t0.Add(st.at)
		if got := describe(s.step(st.ev, now), now); got != st.want {
			t.Fatalf("step %d (at %v): %q; want %q", i, st.at, got, st.want)
		}
	}
}

func TestExchangerStateMachine(t *testing.T) {
	const capacity = 48
	for _, tc := range []struct {
		name         string
		exitWhenDone bool
		budget       bool
		steps        []xstep
	}{
		{"batching: pages wait for company, then go in one call with a refill", false, false, []xstep{
			{ev: tick(0), want: "call [] want 48"},
			{ev: replied(48, 48, nil), want: "settle"},
			{at: 10 * time.Millisecond, ev: handedIn(pa1)},
			{at: 10 * time.Millisecond, ev: tick(40), want: "sleep 500ms"},
			{at: 200 * time.Millisecond, ev: handedIn(pa2)},
			{at: 200 * time.Millisecond, ev: tick(30), want: "sleep 310ms"},
			{at: 510 * time.Millisecond, ev: tick(20), want: "call [a1 a2] want 28"},
			{at: 511 * time.Millisecond, ev: replied(28, 28, nil, pa1, pa2), want: "settle"},
			{at: 512 * time.Millisecond, ev: tick(48), want: "sleep 1h0m0s"}, // nothing left: sleeps until an event
		}},
		{"one batch for every shard: a call ends the leases of pages of any shards, in order", false, false, []xstep{
			{ev: tick(0), want: "call [] want 48"},
			{ev: replied(48, 48, nil), want: "settle"},
			{at: time.Millisecond, ev: handedIn(pa1)},
			{at: time.Millisecond, ev: handedIn(pb1)},
			{at: time.Millisecond, ev: handedIn(pa2)},
			{at: 2 * time.Millisecond, ev: event{kind: evBell}},
			{at: 2 * time.Millisecond, ev: tick(40), want: "call [a1 b1 a2] want 8"},
			{at: 3 * time.Millisecond, ev: replied(8, 8, nil, pa1, pb1, pa2), want: "settle"},
		}},
		{"the stop: URLs not started go back with what is finished, nothing is popped, then the end", false, false, []xstep{
			{ev: tick(0), want: "call [] want 48"},
			{ev: replied(48, 48, nil), want: "settle"},
			{at: time.Millisecond, ev: handedIn(pa1)},
			{at: time.Millisecond, ev: event{kind: evStop}},
			{at: time.Millisecond, ev: tick(0, pa2, pa3), want: "call [a1 back:a2 back:a3] want 0"},
			{at: 2 * time.Millisecond, ev: replied(0, 0, nil, pa1, pa2, pa3), want: "settle"},
			{at: 2 * time.Millisecond, ev: tick(0), want: "sleep 1h0m0s"}, // a loop may still hand in its page
			{at: 3 * time.Millisecond, ev: handedIn(pb1)},
			{at: 3 * time.Millisecond, ev: event{kind: evLoopsClosed}},
			{at: 3 * time.Millisecond, ev: tick(0), want: "call [b1] want 0"},
			{at: 4 * time.Millisecond, ev: replied(0, 0, nil, pb1), want: "settle"},
			{at: 4 * time.Millisecond, ev: tick(0), want: "end"},
			{at: 5 * time.Millisecond, ev: tick(0), want: ""}, // ended: nothing more
		}},
		{"a rollback: forget what the lost writes taught, and send the same batch again", false, false, []xstep{
			{ev: handedIn(pa1)},
			{ev: handedIn(pa2)},
			{ev: event{kind: evBell}},
			{ev: tick(0), want: "call [a1 a2] want 48"},
			{at: time.Millisecond, ev: replied(48, 0, fmt.Errorf("shard 1: %w", frontier.ErrRolledBack), pa1, pa2), want: "forget"},
			{at: time.Millisecond, ev: tick(0), want: "call [a1 a2] want 48"}, // hungry still, and nothing was sent
			{at: 2 * time.Millisecond, ev: replied(48, 3, nil, pa1, pa2), want: "settle"},
		}},
		{"a shard that lost writes answering only a pop: the rest stands, the cache is forgotten", false, false, []xstep{
			{ev: tick(0), want: "call [] want 48"},
			{ev: func() event {
				e := replied(48, 2, nil)
				e.reply.res.Forget, e.reply.res.Unasked = true, fmt.Errorf("shard 2: %w", frontier.ErrRolledBack)
				return e
			}(), want: "settle; forget"},
		}},
		{"a lost reply that had gone through: the batch goes again, nothing forgotten", false, false, []xstep{
			{ev: handedIn(pa1)},
			{ev: event{kind: evBell}},
			{ev: tick(0), want: "call [a1] want 48"},
			{at: time.Millisecond, ev: replied(48, 0, frontier.ErrReplyLost, pa1), want: "resend"},
			{at: time.Millisecond, ev: tick(0), want: "call [a1] want 48"},
		}},
		{"the crawl's end stops the worker, with ExitWhenDone, when nothing was popped", true, false, []xstep{
			{ev: tick(0), want: "call [] want 48"},
			{ev: over(replied(48, 1, nil)), want: "settle"}, // it popped one: not over for this worker yet
			{at: time.Millisecond, ev: handedIn(pa1)},
			{at: time.Millisecond, ev: event{kind: evBell}},
			{at: time.Millisecond, ev: tick(0), want: "call [a1] want 48"},
			{at: 2 * time.Millisecond, ev: over(replied(48, 0, nil, pa1)), want: "settle; crawl done"},
		}},
		{"a page budget's end stops the worker even with URLs popped (they go back)", true, true, []xstep{
			{ev: tick(0), want: "call [] want 48"},
			{ev: over(replied(48, 2, nil)), want: "settle; crawl done"},
		}},
		{"without ExitWhenDone the crawl's end is only news", false, false, []xstep{
			{ev: tick(0), want: "call [] want 48"},
			{ev: over(replied(48, 0, nil)), want: "settle"},
		}},
		{"a gone crawl ends everything: the worker is stopped, what the loops hand in is discarded", false, false, []xstep{
			{ev: handedIn(pa1)},
			{ev: event{kind: evBell}},
			{ev: tick(0), want: "call [a1] want 48"},
			{at: time.Millisecond, ev: replied(48, 0, frontier.ErrGone, pa1), want: "mark gone"},
			{at: time.Millisecond, ev: tick(0), want: "discard"},
		}},
		{"gone, as another goroutine found: the next tick discards", false, false, []xstep{
			{ev: handedIn(pa1)},
			{ev: event{kind: evGone}},
			{ev: tick(0), want: "discard"},
		}},
		{"failures back off; with the loops gone, the machine gives up after a few", false, false, []xstep{
			{ev: handedIn(pa1)},
			{ev: event{kind: evLoopsClosed}},
			{ev: tick(0), want: "call [a1] want 48"},
			{ev: replied(48, 0, errors.New("i/o timeout"), pa1), want: "retry"},
			{ev: tick(0), want: "sleep 200ms"},
			{at: 200 * time.Millisecond, ev: tick(0), want: "call [a1] want 48"},
			{at: 200 * time.Millisecond, ev: replied(48, 0, errors.New("i/o timeout"), pa1), want: "retry"},
			{at: 600 * time.Millisecond, ev: tick(0), want: "call [a1] want 48"},
			{at: 600 * time.Millisecond, ev: replied(48, 0, errors.New("i/o timeout"), pa1), want: "give up"},
			{at: 700 * time.Millisecond, ev: tick(0), want: ""},
		}},
		{"a wake message tells the frontier which shard has URLs", false, false, []xstep{
			{ev: event{kind: evWake, channel: "crawl:{c/1}:queue:wake", payload: "1"}, want: "woken crawl:{c/1}:queue:wake"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newExState(exConfig{loops: capacity / pace.Prefetch, exitWhenDone: tc.exitWhenDone, budget: tc.budget})
			runMachine(t, s, tc.steps)
		})
	}
}

// The loop hears everything that already happened before it decides: a
// drain that stopped at the first empty moment (a select between the
// entries and an always-ready case picks at random) sent pages a few to a
// call instead of together.
func TestDrainHearsEverythingHandedIn(t *testing.T) {
	x := newExchanger(exConfig{loops: 2}, time.Now)
	n := cap(x.entries)
	for i := 0; i < n; i++ {
		x.entries <- entry{page: frontier.Finished{Lease: lease(fmt.Sprint("a", i), "a")}}
	}
	x.bell <- struct{}{}
	x.drain(context.Background())
	if len(x.s.pending) != n || !x.s.p.Hungry() {
		t.Fatalf("drain heard %d of %d entries (bell heard: %v)", len(x.s.pending), n, x.s.p.Hungry())
	}
}

// The pause, as the state machine knows it: the message a pause sends
// marks the worker paused at once (its exchanger gives back the URLs
// waiting in its buffer), a reply that asked for URLs says what Redis
// holds (the message may be stale, or lost), and a call that wanted none
// did not read the pause and changes nothing.
func TestThePauseIsWhatTheLastPopSaid(t *testing.T) {
	s := newExState(exConfig{loops: 4})
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	paused := func(e event) event { e.reply.res.Info.Paused = true; return e }
	for i, c := range []struct {
		ev   event
		want bool
	}{
		{event{kind: evWake, channel: "crawl:{c}:queue:wake", payload: control.WakePaused}, true},
		{replied(0, 0, nil), true},         // wanted nothing: the pause unread
		{replied(8, 0, nil), false},        // Redis says: not paused (a resume came first)
		{paused(replied(8, 0, nil)), true}, // the message was lost: the pop says so
		{replied(0, 0, nil), true},         // unread again
		{event{kind: evWake, channel: "crawl:{c}:queue:wake", payload: "resumed"}, true}, // the next pop decides
		{replied(8, 3, nil), false},
	} {
		s.step(c.ev, t0.Add(time.Duration(i)*time.Second))
		if s.paused != c.want {
			t.Fatalf("step %d: paused %v; want %v", i, s.paused, c.want)
		}
	}
}

// A late URL handed in asks its host for a new token in the call that
// carries it, unless the worker stops or the crawl is paused: then it
// goes back, as the buffer's URLs do (a new token would come back to a
// buffer nothing takes from).
func TestLateURLsAskAgainOnlyWhileTheWorkerGoesOn(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		ev   *event
		want bool
	}{
		{"running", nil, true},
		{"stopping", &event{kind: evStop}, false},
		{"paused", &event{kind: evWake, channel: "crawl:{c}:queue:wake", payload: control.WakePaused}, false},
	} {
		s := newExState(exConfig{loops: 4})
		s.step(event{kind: evHandedIn, entry: entry{back: lease("late", "a"), late: time.Millisecond}}, t0)
		s.step(event{kind: evBell}, t0)
		if c.ev != nil {
			s.step(*c.ev, t0)
		}
		var call *action
		for now := t0; call == nil && now.Before(t0.Add(10*time.Second)); now = now.Add(100 * time.Millisecond) {
			for _, a := range s.step(event{kind: evTick, idle: 4}, now) {
				if a.kind == actCall {
					call = &a
				}
			}
		}
		switch {
		case call == nil || len(call.batch) != 1:
			t.Errorf("%s: no call sent the late URL", c.name)
		case call.again != c.want:
			t.Errorf("%s: the call asks again: %v; want %v", c.name, call.again, c.want)
		}
	}
}

// Newer settings, as the state machine learns of them: a reply or a wake
// message that says a newer version is in force brings actReload (an
// older or the same one does not, nor a failed call's); the reload's
// event takes the version, the budget and the pacing, and asks at once.
func TestNewerSettingsAreReadOnceSaid(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	reloads := func(acts []action) bool {
		for _, a := range acts {
			if a.kind == actReload {
				return true
			}
		}
		return false
	}
	settings := func(e event, v int64) event { e.reply.res.Info.Settings = v; return e }
	s := newExState(exConfig{loops: 4, rate: 20, burst: 1, version: 2})
	for i, c := range []struct {
		ev   event
		want bool
	}{
		{settings(replied(8, 3, nil), 2), false},
		{settings(replied(8, 3, nil), 1), false},
		{settings(replied(8, 0, errors.New("timeout")), 3), false},
		{settings(replied(8, 0, nil), 3), true},
		{event{kind: evWake, channel: "crawl:{c}:queue:wake", payload: "settings 2"}, false},
		{event{kind: evWake, channel: "crawl:{c}:queue:wake", payload: "settings 3"}, true},
		{event{kind: evWake, channel: "crawl:{c}:queue:wake", payload: "settings x"}, false},
	} {
		if got := reloads(s.step(c.ev, t0.Add(time.Duration(i)*time.Second))); got != c.want {
			t.Fatalf("step %d: reload %v; want %v", i, got, c.want)
		}
	}
	s.p.Failed(t0) // a failed call: the next pop is held back
	if s.p.PollAt().IsZero() {
		t.Fatal("a failed call held nothing back")
	}
	s.step(event{kind: evReloaded, cfg: exConfig{rate: 2, burst: 1, budget: true, version: 3}}, t0)
	if s.version != 3 || !s.budget || !s.p.PollAt().IsZero() {
		t.Fatalf("after the reload: version %d, budget %v, poll at %v; want 3, true, now", s.version, s.budget, s.p.PollAt())
	}
	if s.step(settings(replied(8, 0, nil), 3), t0); s.version != 3 {
		t.Fatal("the version went back")
	}
	s.step(event{kind: evReloaded, cfg: exConfig{rate: 50, version: 2}}, t0) // an older read, late: ignored
	if s.version != 3 {
		t.Fatalf("an older version's reload took: %d", s.version)
	}
}

// The pacing after a change of rate is a fresh worker's at that rate,
// whatever the rate was: from any rate and burst (0.1/s to inf) to any.
func TestThePacingAfterAChangeIsTheNewRates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rate := func(name string) float64 {
			if rapid.IntRange(0, 5).Draw(t, name+"Inf") == 0 {
				return math.Inf(1)
			}
			return rapid.Float64Range(0.1, 100_000).Draw(t, name)
		}
		r1, r2 := rate("from"), rate("to")
		b1, b2 := rapid.IntRange(1, 1000).Draw(t, "burst1"), rapid.IntRange(1, 1000).Draw(t, "burst2")
		s := newExState(exConfig{loops: 8, rate: r1, burst: b1})
		s.step(event{kind: evReloaded, cfg: exConfig{rate: r2, burst: b2, version: 1}}, time.Now())
		fresh := newExState(exConfig{loops: 8, rate: r2, burst: b2})
		gap, late := s.p.Pacing()
		if fgap, flate := fresh.p.Pacing(); gap != fgap || late != flate {
			t.Fatalf("%v/%d → %v/%d: gap %v late %v; a fresh worker's: gap %v late %v", r1, b1, r2, b2, gap, late, fgap, flate)
		}
	})
}
