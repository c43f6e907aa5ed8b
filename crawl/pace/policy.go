package pace

import (
	"math"
	"time"

	"github.com/redcrawl/crawler/politeness"
)

// Policy is the timing half of the exchanger's state machine (crawl's
// exstate.go),
// with no I/O and on the clock it is given: when to call Redis, with how
// many finished pages and how many URLs to ask for, and how long to sleep
// otherwise. The state machine tells it what happened (the functions
// below) and asks it what to do (Decide); the machine keeps the entries
// waiting to be sent, and gives their count in World. policy_test.go drives the
// policy step by step on a fake clock.
//
// The aim is few calls: a lone call costs a lightly loaded Redis more than
// a page's work, so a finished page waits up to `linger` for company, and
// the ready buffer is refilled only when it is almost empty, in one big
// pop. Two things cut the wait short: a fetch loop with nothing to do (the
// links of the pages waiting may be its work, here or in another worker),
// and the stop (everything finished is sent, nothing more is popped).
type Policy struct {
	capacity int           // the ready buffer's size
	oldest   time.Time     // when the oldest entry waiting to be sent arrived
	linger   time.Duration // how long a finished page may wait for company
	pollAt   time.Time     // no pop before this: idle, or backing off after a failure
	idle     time.Duration // the idle poll interval, doubling to idleMax
	hungry   bool          // a fetch loop found nothing ready since the last call
	refilled bool          // the queue got URLs while no loop waited
	short    bool          // the last pop found fewer URLs than it asked for: the hosts' tokens, not the loops, are the limit
	closed   bool          // the fetch loops have all returned
	failures int           // calls failed in a row
	// gap, when not 0, is the least time between pops after one that found
	// fewer URLs than wanted, in a crawl whose pops reserve the tokens due
	// within a window (PopTiming): such a pop took all that comes due
	// before the next, so asking sooner only makes more, smaller calls.
	gap time.Duration
	// Demand (a rate-limited crawl): a token popped for a URL due now is
	// good for late past its window's opening (politeness.TokenWindow;
	// 0: no tokens, no demand but the buffer's size), so a pop asks for no
	// more URLs than the loops will start within that time (target), and
	// asks again before the loops would drain the buffer during a call
	// (call: its recent duration). How many URLs a loop takes in a time
	// comes from how long the slowest and the fastest of the recent URLs
	// kept a loop (LoopTimes): counted with the slowest when a pop could
	// bring too many, with the fastest when a refill could come too late.
	loops      int
	late       time.Duration
	call       time.Duration
	slow, fast time.Duration
	most       time.Duration // the ninth decile
	samples    int           // the URLs slow, fast and most are of
	// missed is how far past its window the latest URL that missed it
	// was taken (at missedAt): the loops stalled that much longer than
	// their recent times said (a garbage collection, a busy CPU), and a
	// pop keeps that much more of the window for the clocks while the
	// memory of it lasts (margin).
	missed   time.Duration
	missedAt time.Time
}

const (
	// A finished page waits at most this long for company before it is
	// sent (and at most unsent pages wait: policy.unsent): its links reach
	// other workers this much later at worst, and a worker killed with
	// kill -9 loses at most this much work (the leases expire and the
	// pages are fetched again).
	lingerBusy = 500 * time.Millisecond
	// ... or only this long after a pop found no URL at all: other workers
	// may be idle too, waiting for exactly those links.
	lingerStarved = 10 * time.Millisecond
	// maxSend pages go in one call at most: what a polite crawl finishes
	// between two pops (PopTiming) at a few hundred pages a second, and a
	// few milliseconds of Redis's time.
	maxSend = 128
	// An idle worker asks for URLs at most once a second, and at least
	// idleMin apart; when some host is due sooner, it asks then.
	idleMin, idleMax = 50 * time.Millisecond, time.Second
	// A rate-limited crawl's pops reserve the hosts' tokens due within a
	// window (frontier.Options.PopAhead), and come a gap apart when the
	// tokens, not the buffer, limit them (PopTiming): every token is taken
	// before it is due, in a few calls a second instead of one a token.
	popGapMin, popGapMax, popSlack = 50 * time.Millisecond, 500 * time.Millisecond, 50 * time.Millisecond
	// retryMin and retryMax bound the wait after a failed call.
	retryMin, retryMax = 200 * time.Millisecond, 5 * time.Second
	// giveUpAfter failed calls in a row, once the loops are gone, the
	// exchanger stops trying: the leases expire and the URLs are fetched
	// again by someone.
	giveUpAfter = 3
)

// PopTiming is a rate-limited crawl's pop window and gap, for hosts of
// rate requests a second and a burst of burst. The gap is the time a
// host's bucket takes to fill (burst/rate), within popGapMin and
// popGapMax: a pop then finds each host's tokens before its bucket
// overflows, so no host is held below its rate by the pops, and the calls
// are as few as that allows (a call costs Redis more than its pages' work
// at a few dozen pages; bench/README.md). The window is popSlack longer,
// so that a token due just after the next pop is taken by this one.
func PopTiming(rate float64, burst int) (ahead, gap time.Duration) {
	gap = popGapMax
	if fill := time.Duration(float64(max(burst, 1)) / rate * float64(time.Second)); rate > 0 && fill < gap {
		gap = max(fill, popGapMin)
	}
	return gap + popSlack, gap
}

// ForRate sets the policy for a crawl whose hosts get rate requests a
// second with a bucket of burst (0 or +Inf: no limit, no tokens).
func (p *Policy) ForRate(rate float64, burst int) {
	p.gap, p.late = 0, 0
	if rate <= 0 || math.IsInf(rate, 1) {
		return
	}
	_, p.gap = PopTiming(rate, burst)
	early, width := politeness.TokenWindow(rate, burst)
	p.late = width - early
}

// New is the policy of a worker whose ready buffer holds capacity URLs
// (Prefetch a fetch loop: its loops are capacity/Prefetch, at least one).
func New(capacity int) *Policy {
	return &Policy{capacity: capacity, idle: idleMin, linger: lingerStarved, loops: max(1, capacity/Prefetch)}
}

// Prefetch is how many URLs a loop may have waiting in the ready buffer
// (its size: Prefetch a loop), and MaxPrefetch how many at most when
// calls are slow (Policy.size).
const Prefetch, MaxPrefetch = 6, 64

// World is what the exchanger knows that the policy does not keep.
type World struct {
	Ready    int  // leased URLs in the ready buffer
	Pending  int  // finished pages and given-back URLs not yet sent
	Stopping bool // the worker stops: send everything, pop nothing
	Idle     int  // fetch loops waiting for a URL
	// busySince: when each busy loop took its URL
	BusySince []time.Time
}

// target is how many URLs the ready buffer should hold, for the loops'
// demand: its size, or in a rate-limited crawl as many as the loops will
// start by the time a call's reply could arrive and a token's late window
// after that (a popped URL's window opens when its reply arrives:
// frontier.Lease; the URLs already waiting go first), less the part of
// the window kept for the clocks (a timer that fires late, a window's
// end rounded down to the µs, a stall: margin). A URL popped beyond that would miss its
// window, go back and be popped again.
func (p *Policy) target(now time.Time, w World) int {
	size := p.size()
	if p.late <= 0 {
		return size
	}
	if p.slow <= 0 { // not measured yet: a URL for each loop that waits
		return min(size, w.Idle)
	}
	return min(size, p.starts(now, now.Add(p.call+p.late-p.margin(now)), w, p.slowest(), p.next()))
}

// slowest is how long a URL may keep a loop: the slowest of the last
// ones, and more by eight times what the slowest of that many falls short
// of the slowest there is, on average (their spread over their number).
func (p *Policy) slowest() time.Duration {
	if p.samples == 0 {
		return p.slow
	}
	return p.slow + 8*(p.slow-p.fast)/time.Duration(p.samples)
}

// next is how long a URL taken next may keep a loop, counted over several
// loops and rounds: the ninth decile of the last ones, and an eighth of
// their spread more (at most slowest). A URL slower than that is one of a
// few; another loop takes the next URL meanwhile.
func (p *Policy) next() time.Duration {
	return min(p.most+(p.slow-p.fast)/8, p.slowest())
}

// starts is how many URLs the loops will take from now to until: a loop
// that waits takes one now, a busy one when its URL has kept it first,
// and each again every next after that. Whole URLs only: a loop that
// might be done just after until takes none.
func (p *Policy) starts(now, until time.Time, w World, first, next time.Duration) int {
	rounds := func(free time.Time) int {
		if free.After(until) {
			return 0
		}
		return 1 + int(until.Sub(free)/next)
	}
	n := w.Idle * rounds(now)
	for _, since := range w.BusySince {
		free := since.Add(first)
		if free.Before(now) {
			free = now
		}
		n += rounds(free)
	}
	return n
}

// size is the ready buffer's: prefetch URLs a loop, or, where a call
// takes longer than a few URLs keep a loop, what the loops take in two
// calls and a half at the fastest (calls are one at a time: the buffer
// must last through one while the one before brings enough for the next),
// up to maxPrefetch a loop.
func (p *Policy) size() int {
	size := p.capacity
	if p.fast > 0 && p.call > 0 {
		calls := int(2.5*float64(p.loops)*float64(p.call)/float64(p.fast)) + 1
		size = max(size, min(calls, MaxPrefetch*p.loops))
	}
	return size
}

// Call is one exchange: send the first Send entries waiting, pop up to
// Want URLs.
type Call struct{ Send, Want int }

// Decide says, at now, whether to call Redis and with what; if not, until
// when to sleep (unless an event comes first).
func (p *Policy) Decide(now time.Time, w World) (c Call, ok bool, sleepUntil time.Time) {
	if p.failures > 0 && now.Before(p.pollAt) {
		return Call{}, false, p.pollAt // backing off: nothing can be done before
	}
	target := p.target(now, w)
	room := target - w.Ready
	// A loop with nothing to do hastens the send, unless the tokens are
	// what it waits for (a rate-limited crawl whose last pop found some:
	// links sent sooner would not be fetched sooner).
	hungry := p.hungry && (p.gap == 0 || p.linger == lingerStarved)
	send := w.Pending > 0 && (w.Pending >= p.unsent() || w.Stopping || hungry || p.closed ||
		!now.Before(p.oldest.Add(p.linger)))
	// Refill when the buffer is almost empty: a refill takes a millisecond
	// or two, a page tens, so the buffer need only cover the call.
	pop := !w.Stopping && room > 0 && !now.Before(p.pollAt) && (p.hungry || p.refillDue(now, w))
	if send || pop {
		c = Call{Send: min(w.Pending, maxSend)}
		if !w.Stopping && room > 0 && (pop || p.failures == 0) {
			c.Want = room // a send pops along: it costs Redis little more
		}
		return c, true, time.Time{}
	}
	sleepUntil = now.Add(time.Hour)
	if w.Pending > 0 {
		sleepUntil = p.oldest.Add(p.linger)
	}
	if (room > 0 || p.failures > 0) && now.Before(p.pollAt) && p.pollAt.Before(sleepUntil) {
		sleepUntil = p.pollAt
	}
	if t := p.refillAt(now, w); !w.Stopping && !t.IsZero() && t.Before(sleepUntil) {
		if t.Before(p.pollAt) {
			t = p.pollAt
		}
		sleepUntil = t
	}
	return Call{}, false, sleepUntil
}

// refillAt is when a pop will be due for the loops that are busy now:
// the first moment at which the URLs waiting will not last the loops
// through a Call, and, in a rate-limited crawl, at which one popped then
// could still be taken within its window. Zero: none in sight (the next URL
// handed in or the next bell decides again).
func (p *Policy) refillAt(now time.Time, w World) time.Time {
	if p.fast <= 0 || p.slow <= 0 || p.refillDue(now, w) {
		return time.Time{}
	}
	lo, hi := now, now.Add(refillHorizon)
	if !p.refillDue(hi, w) {
		return time.Time{}
	}
	for hi.Sub(lo) > refillPrecision {
		mid := lo.Add(hi.Sub(lo) / 2)
		if p.refillDue(mid, w) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// A refill is looked for refillHorizon ahead, to refillPrecision.
const refillHorizon, refillPrecision = 2 * time.Second, 100 * time.Microsecond

// refillDue: at now, the URLs waiting will not last the loops through a
// call (counted at the fastest, unless the last pop found the tokens to
// be the limit), or are down to an eighth of the target;
// and there is room for more (a rate-limited crawl's target, counted at
// the slowest, is above them). It only turns true as time goes on, while
// nothing else happens (refillAt).
func (p *Policy) refillDue(now time.Time, w World) bool {
	target := p.target(now, w)
	if w.Ready >= target {
		return false
	}
	if w.Ready <= target/8 {
		return true
	}
	// While the tokens are the limit, the URLs waiting are reserved for
	// later windows and loops wait for them by design: a pop sooner would
	// find no token sooner.
	return !p.short && p.fast > 0 && p.starts(now, now.Add(p.call), w, p.fast, p.fast) >= w.Ready
}

// unsent is how many finished pages (and given-back URLs) may wait to be
// sent: two a loop, at least 64 and at most maxSend. A worker killed with
// kill -9 leaves its pages in flight (one a loop) and those waiting to be
// fetched again: its crash costs at most loops + unsent duplicate fetches
// (docs/design.md's failure table), the waiting ones also at most
// lingerBusy's worth. Fewer would cost calls: at 16, a busy crawl's
// script calls a page rose by half (BenchmarkBusyRedis, 0.058 to 0.094),
// at 64 by a sixth, its Redis CPU within the noise.
func (p *Policy) unsent() int { return unsentFor(p.loops) }

func unsentFor(loops int) int { return min(maxSend, max(2*loops, 64)) }

// CrashRefetches is the most pages a worker of concurrency fetch loops,
// killed with kill -9, can cost in fetches made again: its pages in
// flight (one a loop) and its finished pages not yet sent to Redis (two a
// loop, at least 64, at most 128; none older than half a second). Their
// leases expire and other workers fetch them again; every other URL it
// held, leased but not started, goes back unfetched.
func CrashRefetches(concurrency int) int { return concurrency + unsentFor(concurrency) }

// AskNow lifts any wait before the next pop: the settings changed, and
// the next pop asks under them.
func (p *Policy) AskNow() { p.pollAt = time.Time{} }

// SetLoopTimes tells the policy how long the recent URLs kept a loop (the
// slowest, the fastest, the ninth decile, of samples URLs: LoopTimes.Read).
func (p *Policy) SetLoopTimes(slow, fast, most time.Duration, samples int) {
	p.slow, p.fast, p.most, p.samples = slow, fast, most, samples
}

// Loops is the fetch loops the policy paces for.
func (p *Policy) Loops() int { return p.loops }

// PollAt is the time before which no pop goes (zero: none is held back).
func (p *Policy) PollAt() time.Time { return p.pollAt }

// Hungry: a fetch loop found nothing ready since the last call.
func (p *Policy) Hungry() bool { return p.hungry }

// Pacing is the least time between pops that found fewer URLs than wanted
// (gap), and how long a token stays good past its window's opening (late).
func (p *Policy) Pacing() (gap, late time.Duration) { return p.gap, p.late }

// FillBuffer drops the demand: pops ask for the ready buffer's size
// whatever the loops will start in a token's window, as a policy without
// demand would (the simulations show what that costs: URLs popped that
// miss their windows).
func (p *Policy) FillBuffer() { p.late = 0 }
