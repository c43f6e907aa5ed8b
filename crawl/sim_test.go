package crawl

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redcrawl/crawler/crawl/pace"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// sim runs whole crawls on one simulated clock: workers made of the real
// exchanger state machine (exState, its policy), the real ready queue and
// the real token-window rule, popping through the real exchange.lua on a
// miniredis whose clock is the simulation's, while fetch loops, fetch
// latencies and Redis round trips are events. It is what timing_test.go
// holds to the invariants over random rates, bursts and shapes: nothing
// in it waits on a wall clock, so a run of thousands of pages takes a
// fraction of a second and replays exactly.
// simDebug, when set, hears every call.
var simDebug func(format string, args ...any)

// simT is what a simulation needs of a test (*testing.T and *rapid.T both).
type simT interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

type simParams struct {
	Rate    float64 // requests a second a host; 0: no limit
	Burst   int
	Hosts   int
	PerHost int // URLs a host, all seeded
	Workers int
	Loops   int           // fetch loops a worker
	Latency time.Duration // a fetch's, on average
	Jitter  float64       // each fetch's latency is Latency times 1 ± up to this
	RTT     time.Duration // every call's round trip; Redis acts half-way
	Seed    uint64        // of the jitter
}

func (p simParams) String() string {
	rate := "inf"
	if p.Rate > 0 {
		rate = fmt.Sprintf("%g/s", p.Rate)
	}
	return fmt.Sprintf("rate %s burst %d, %d hosts x %d URLs, %d workers x %d loops, latency %v ± %.0f %%, round trip %v",
		rate, p.Burst, p.Hosts, p.PerHost, p.Workers, p.Loops, p.Latency, 100*p.Jitter, p.RTT)
}

// simRules are the parts of a worker a test may swap for a broken one, to
// see that the checks catch it.
type simRules struct {
	// late says whether a URL taken at now must go back unfetched
	// (default: pastWindow, the worker's rule).
	late func(l *frontier.Lease, now time.Time) bool
	// policy adjusts each worker's policy after forRate (nil: as a worker
	// sets it).
	policy func(p *pace.Policy)
	// noRetoken: a late URL goes back, without asking its host for a new
	// token (the worker's rule before exchange.lua's ex_again).
	noRetoken bool
	// stall, when set, is how long a loop waits after taking a URL before
	// its request may go (admit waiting for its host's robots.txt).
	stall func(*rand.Rand) time.Duration
}

type simResult struct {
	requests map[string][]time.Time // host -> its requests' times, in order
	lateOf   map[string]int         // URL -> how often it went back late
	late     int
	missed   int // URLs that missed their token's window: given a new one (retokened) or put back (late)
	retoken  int
	fetched  int            // distinct URLs fetched
	starts   []time.Time    // when each was first fetched, in order
	fetches  [][2]time.Time // every fetch's start and end
	last     time.Time      // when the last fetch ended
	calls    int
	start    time.Time
	end      time.Time // when the last fetch ended (or the run gave up)
	finished bool
}

// pagesPerSecond is the crawl's pace. Where the hosts' rates are the
// limit: the URLs started after the first, over the time from the first
// start to the last (the last fetch's length is no crawler's to shorten).
// Where the loops are: the URLs fetched in the middle eight tenths of the
// crawl's time, each counted by the part of its fetch that fell in it,
// over that time (loops start in waves: counting starts would count a
// wave or not by where the span's ends fall).
func (r simResult) pagesPerSecond(loopBound bool) float64 {
	n := len(r.starts)
	if n < 2 {
		return math.Inf(1)
	}
	if !loopBound {
		if d := r.starts[n-1].Sub(r.starts[0]).Seconds(); d > 0 {
			return float64(n-1) / d
		}
		return math.Inf(1)
	}
	span := r.last.Sub(r.starts[0])
	a, b := r.starts[0].Add(span/10), r.last.Add(-span/10)
	if !b.After(a) {
		return math.Inf(1)
	}
	var done float64
	for _, f := range r.fetches {
		lo, hi := f[0], f[1]
		if lo.Before(a) {
			lo = a
		}
		if hi.After(b) {
			hi = b
		}
		if hi.After(lo) {
			done += float64(hi.Sub(lo)) / float64(f[1].Sub(f[0]))
		}
	}
	return done / b.Sub(a).Seconds()
}

type simEventKind int

const (
	simExec    simEventKind = iota // Redis runs a worker's call
	simReply                       // its reply arrives
	simDone                        // a loop's fetch ends
	simDue                         // a queued URL's window opens
	simWake                        // a state machine's sleep ends
	simStalled                     // a loop's wait before its request ends
)

type simEvent struct {
	at   time.Time
	seq  int
	kind simEventKind
	w    *simWorker
	loop int
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

type simLoop struct {
	busy  bool
	since time.Time
	l     leased
}

type simWorker struct {
	x       *exchanger // its exchange method only (what a call sends, and what its reply means)
	s       *exState
	q       *readyQueue
	loops   []simLoop
	events  []event // handed in, bells: heard at the next wake
	inCall  bool
	call    action
	res     reply
	wakeAt  time.Time
	dueAt   time.Time
	times   pace.LoopTimes
	belled  bool
	stopped bool
}

type simulation struct {
	p       simParams
	rules   simRules
	m       *miniredis.Miniredis
	now     time.Time
	clock   time.Time // what the frontiers read as their process's clock (a reply's arrival)
	evq     simQueue
	seq     int
	res     simResult
	total   int
	fetchd  map[string]bool
	stalled map[string]bool // URLs a loop waited with before their requests (simRules.stall)
	rnd     *rand.Rand
}

func (s *simulation) at(t time.Time, kind simEventKind, w *simWorker, loop int) {
	s.seq++
	heap.Push(&s.evq, simEvent{at: t, seq: s.seq, kind: kind, w: w, loop: loop})
}

// runSim crawls p's site and reports what happened; limit bounds the
// simulated time.
func runSim(t simT, p simParams, rules simRules, limit time.Duration) simResult {
	if rules.late == nil {
		rules.late = pastWindow
	}
	ctx := context.Background()
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	s := &simulation{p: p, rules: rules, m: m, now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC), fetchd: map[string]bool{}, stalled: map[string]bool{},
		rnd: rand.New(rand.NewPCG(p.Seed, 1))}
	s.clock = s.now
	m.SetTime(s.now)
	s.res = simResult{requests: map[string][]time.Time{}, lateOf: map[string]int{}, start: s.now}
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	c.HSet(ctx, keyspace.KeysFor("sim").Config, "scope", "host")
	st := settings.Default()
	st.Rate, st.Burst, st.ExpectedURLs = p.Rate, p.Burst, 10_000
	if p.Rate <= 0 {
		st.Rate = math.Inf(1)
	}
	o := FrontierOptions(st)
	o.Shards, o.Lease = 1, time.Hour
	o.Clock = func() time.Time { return s.clock }
	seedFr, err := frontier.Create(ctx, c, "sim", o, st.Bloom())
	if err != nil {
		t.Fatal(err)
	}
	var items []frontier.Item
	for h := 0; h < p.Hosts; h++ {
		for i := 0; i < p.PerHost; i++ {
			items = append(items, frontier.Item{URL: fmt.Sprintf("http://h%d.sim/%d", h, i)})
		}
	}
	if _, err := seedFr.EnqueueAll(ctx, items); err != nil { // as seeds: the Bloom filter's false positives keep none out
		t.Fatal(err)
	}
	s.total = len(items)
	var ws []*simWorker
	for i := 0; i < p.Workers; i++ {
		fr, err := frontier.Open(ctx, c, "sim", o)
		if err != nil {
			t.Fatal(err)
		}
		x := newExchanger(exConfig{loops: p.Loops, rate: st.Rate, burst: st.Burst}, func() time.Time { return s.now })
		x.fr, x.known = fr, newKnown(1000)
		if rules.policy != nil {
			rules.policy(x.s.p)
		}
		w := &simWorker{x: x, s: x.s, q: x.ready, loops: make([]simLoop, p.Loops)}
		ws = append(ws, w)
		s.wake(w)
	}
	deadline := s.now.Add(limit)
	for s.evq.Len() > 0 && len(s.res.fetches) < s.total {
		ev := heap.Pop(&s.evq).(simEvent)
		if ev.at.After(deadline) {
			s.now = deadline
			break
		}
		s.now = ev.at
		w := ev.w
		switch ev.kind {
		case simExec:
			s.exec(t, w)
		case simReply:
			w.inCall = false
			for _, a := range w.s.step(event{kind: evReplied, reply: w.res}, s.now) {
				switch a.kind {
				case actSettle:
					s.settleLate(a.reply)
					var ready []leased
					for _, l := range append(a.reply.res.Again, a.reply.res.Popped...) {
						ready = append(ready, leased{l, a.reply.res.Info})
					}
					w.q.add(ready...)
				case actRetry, actGiveUp, actForget, actResend, actMarkGone:
					t.Fatalf("%v: the exchange failed: %v", p, a.err)
				}
			}
			s.feed(w)
			s.wake(w)
		case simDone:
			lp := &w.loops[ev.loop]
			lp.busy = false
			s.res.fetches = append(s.res.fetches, [2]time.Time{lp.since, s.now})
			s.res.last = s.now
			w.times.Add(s.now.Sub(lp.since))
			w.events = append(w.events, event{kind: evHandedIn,
				entry: entry{page: frontier.Finished{Lease: lp.l.lease, Outcome: frontier.Outcome{Stat: OutcomeOK, Fetched: true}}}})
			s.feed(w)
			s.wake(w)
		case simStalled:
			s.take(w, ev.loop, w.loops[ev.loop].l)
			s.feed(w)
			s.wake(w)
		case simDue:
			if !w.dueAt.After(s.now) {
				w.dueAt = time.Time{}
			}
			s.feed(w)
			s.wake(w)
		case simWake:
			if !w.wakeAt.After(s.now) {
				s.wake(w)
			}
		}
	}
	s.res.finished = s.res.fetched == s.total
	if s.res.end.IsZero() || !s.res.finished {
		s.res.end = s.now
	}
	return s.res
}

// exec is Redis running w's call at now; its reply arrives half a round
// trip later, and the frontier reads its arrival there.
func (s *simulation) exec(t simT, w *simWorker) {
	s.m.SetTime(s.now)
	s.clock = s.now.Add(s.p.RTT / 2)
	res, sent, err := w.x.exchange(context.Background(), w.call.batch, w.call.want, w.call.again && !s.rules.noRetoken)
	if err != nil {
		t.Fatalf("%v: exchange: %v", s.p, err)
	}
	s.res.calls++
	w.res = reply{batch: w.call.batch, want: w.call.want, took: s.p.RTT, res: res, sent: sent}
	s.at(s.clock, simReply, w, 0)
}

// feed gives w's idle loops the URLs whose windows are open, as its fetch
// loops take them (fetchLoops.loop): past its window, a URL goes back.
func (s *simulation) feed(w *simWorker) {
	for i := range w.loops {
		lp := &w.loops[i]
		for !lp.busy {
			l, ok, at := w.q.next(s.now)
			if !ok {
				if at.IsZero() {
					if !w.belled {
						w.belled = true
						w.events = append(w.events, event{kind: evBell})
					}
				} else if w.dueAt.IsZero() || at.Before(w.dueAt) {
					w.dueAt = at
					s.at(at, simDue, w, 0)
				}
				return
			}
			if s.rules.stall != nil && !s.stalled[l.lease.Item.URL] {
				s.stalled[l.lease.Item.URL] = true    // robots.txt is waited for once
				if d := s.rules.stall(s.rnd); d > 0 { // waits (robots.txt) before its request
					lp.busy, lp.l, lp.since = true, l, s.now
					s.at(s.now.Add(d), simStalled, w, i)
					continue
				}
			}
			s.take(w, i, l)
		}
	}
}

// take is loop i of w about to send l's request now: past its token's
// window, it goes back to its worker, whose next exchange asks the host
// for a new one (with noRetoken: gives it back).
func (s *simulation) take(w *simWorker, i int, l leased) {
	lp := &w.loops[i]
	if !s.rules.late(l.lease, s.now) {
		s.start(w, i, l)
		return
	}
	if simDebug != nil {
		simDebug("%v: loop %d late %s (window %v..%v)", s.now.Sub(s.res.start), i, l.lease.Item.URL, l.lease.NotBefore.Sub(s.res.start), l.lease.Deadline.Sub(s.res.start))
	}
	s.res.missed++
	lp.busy = false // handed back: its worker's next exchange asks its host again (fetchLoops.late)
	w.events = append(w.events, event{kind: evHandedIn, entry: entry{back: l.lease, late: s.now.Sub(l.lease.Deadline)}})
}

// settleLate counts what became of the late URLs of r's batch: given a
// new token (back in the ready buffer) or put back (exchanger.late).
func (s *simulation) settleLate(r reply) {
	eachLate(r, func(l *frontier.Lease, kept bool) {
		if kept {
			s.res.retoken++
			return
		}
		s.res.late++
		s.res.lateOf[l.Item.URL]++
	})
}

// start is loop i of w fetching l's URL now.
func (s *simulation) start(w *simWorker, i int, l leased) {
	lp := &w.loops[i]
	lp.busy, lp.l, lp.since = true, l, s.now
	if simDebug != nil {
		simDebug("%v: loop %d starts %s (window %v..%v)", s.now.Sub(s.res.start), i, l.lease.Item.URL, l.lease.NotBefore.Sub(s.res.start), l.lease.Deadline.Sub(s.res.start))
	}
	host := l.lease.Host
	s.res.requests[host] = append(s.res.requests[host], s.now)
	if !s.fetchd[l.lease.Item.URL] {
		s.fetchd[l.lease.Item.URL] = true
		s.res.fetched++
		s.res.starts = append(s.res.starts, s.now)
		if s.res.fetched == s.total {
			s.res.end = s.now.Add(s.p.Latency) // about: the run goes on to it
		}
	}
	latency := time.Duration(float64(s.p.Latency) * (1 + s.p.Jitter*(2*s.rnd.Float64()-1)))
	s.at(s.now.Add(max(latency, time.Microsecond)), simDone, w, i)
}

// wake is w's exchanger loop once something happened: it hears what was
// handed in, then decides (exchanger.run).
func (s *simulation) wake(w *simWorker) {
	if w.inCall || w.stopped {
		return
	}
	for _, ev := range w.events {
		if ev.kind == evBell {
			w.belled = false
		}
		w.s.step(ev, s.now)
	}
	w.events = w.events[:0]
	idle := 0
	var since []time.Time
	for _, lp := range w.loops {
		if !lp.busy {
			idle++
		} else {
			since = append(since, lp.since)
		}
	}
	tick := event{kind: evTick, ready: w.q.len(), idle: idle, busySince: since}
	tick.slow, tick.fast, tick.most, tick.samples = w.times.Read(2 * len(w.loops))
	for _, a := range w.s.step(tick, s.now) {
		switch a.kind {
		case actCall:
			w.inCall, w.call = true, a
			if simDebug != nil {
				simDebug("%v: call send %d want %d (ready %d idle %d slow %v fast %v)", s.now.Sub(s.res.start), len(a.batch), a.want, tick.ready, idle, tick.slow, tick.fast)
			}
			s.at(s.now.Add(s.p.RTT/2), simExec, w, 0)
		case actSleep:
			if w.wakeAt.After(s.now) && !a.until.Before(w.wakeAt) {
				continue // an earlier wake is set already
			}
			w.wakeAt = a.until
			s.at(a.until, simWake, w, 0)
		case actEnd:
			w.stopped = true
		}
	}
}

// checkBound: no host got more requests in any span of time than its
// tokens' windows allow (politeness.TokenWindow): in a span W, at most
// ⌈(W + width)·rate⌉.
func checkBound(r simResult, rate float64, width time.Duration) error {
	for host, times := range r.requests {
		sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
		for i := range times {
			for j := i + 1; j < len(times); j++ {
				span := times[j].Sub(times[i])
				allowed := math.Ceil((span+width).Seconds()*rate - 1e-9)
				if float64(j-i+1) > allowed {
					return fmt.Errorf("host %s: %d requests in %v, where its tokens allow %.0f (window %v)", host, j-i+1, span, allowed, width)
				}
				if allowed > float64(len(times)) {
					break
				}
			}
		}
	}
	return nil
}
