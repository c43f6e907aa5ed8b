package crawl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/pace"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/politeness"
	"pgregory.net/rapid"
)

// drawSim draws a crawl's shape: rates from 0.1 to a million requests a
// second a host, or none; bursts to 1 000, up to 12 hosts, 3 workers and
// 32 loops a worker, fetches of 1 to 300 ms, each within ±50 % of its
// crawl's, and round trips to Redis of 50 µs to 2 ms (a worker near its
// Redis: a fifth of a token's least late window, politeness.LeastWindow;
// docs/design.md says what farther workers lose).
func drawSim(t *rapid.T) simParams {
	p := simParams{
		Burst:   int(math.Round(math.Exp(rapid.Float64Range(0, math.Log(1000)).Draw(t, "lnBurst")))),
		Hosts:   rapid.IntRange(1, 12).Draw(t, "hosts"),
		Workers: rapid.IntRange(1, 3).Draw(t, "workers"),
		Loops:   rapid.IntRange(1, 32).Draw(t, "loops"),
		Latency: time.Duration(math.Exp(rapid.Float64Range(math.Log(1e6), math.Log(300e6)).Draw(t, "lnLatency"))),
		RTT:     time.Duration(math.Exp(rapid.Float64Range(math.Log(50e3), math.Log(2e6)).Draw(t, "lnRTT"))),
		Jitter:  rapid.Float64Range(0, 0.5).Draw(t, "jitter"),
		Seed:    rapid.Uint64().Draw(t, "seed"),
	}
	if !rapid.Bool().Draw(t, "inf") || rapid.IntRange(0, 9).Draw(t, "finite") > 0 {
		p.Rate = math.Exp(rapid.Float64Range(math.Log(0.1), math.Log(1e6)).Draw(t, "lnRate"))
	}
	// Enough URLs for a steady state: thirty rounds of the loops (300 at
	// least where they are the limit); where the hosts' rates are, 2 s of
	// them if that is more (3 000 at most, or a slow host's burst and a
	// few intervals more); and a hundred round trips' worth (20 000 at
	// most).
	n := math.Min(3000, math.Max(2*idealRate(p), 30*float64(p.Workers*p.Loops)))
	if loopBound(p) {
		n = math.Min(3000, math.Max(300, 30*float64(p.Workers*p.Loops)))
	}
	n = math.Max(n, math.Min(20_000, 100*p.RTT.Seconds()*idealRate(p))) // the start takes a few round trips
	per := math.Ceil(math.Max(2*float64(p.Hosts), n) / float64(p.Hosts))
	if p.Rate > 0 && p.Rate < 1 {
		per = float64(min(p.Burst+3, 400))
	}
	p.PerHost = int(per)
	return p
}

// loopBound: the loops, not the hosts' rates, limit the crawl.
func loopBound(p simParams) bool {
	return p.Rate <= 0 || float64(p.Workers*p.Loops)/p.Latency.Seconds() < p.Rate*float64(p.Hosts)
}

// idealRate is the pages a second no crawler could beat: the hosts' rates
// together, or the loops' pace, whichever is lower.
func idealRate(p simParams) float64 {
	loops := float64(p.Workers*p.Loops) / p.Latency.Seconds()
	if p.Rate <= 0 {
		return loops
	}
	return math.Min(loops, p.Rate*float64(p.Hosts))
}

// The crawl's timing over every rate, burst and shape: no host gets more
// requests in any span than its tokens' windows allow (the bucket's bound,
// rounded to the nearest whole request); no URL goes back twice for
// missing its window, and at most 2 % of them miss it at all; and the
// crawl keeps 90 % of the pace of its hosts' rates or of its loops,
// whichever is lower.
func TestTimingHoldsAtEveryRate(t *testing.T) {
	if testing.Short() {
		t.Skip("rates held over seconds: skipped with -short (go test ./... runs it)")
	}
	rapid.Check(t, func(t *rapid.T) {
		p := drawSim(t)
		r := runSim(t, p, simRules{}, simLimit(p))
		checkSim(t, p, r)
	})
}

// simLimit is ten times the ideal crawl's time, and a minute more.
func simLimit(p simParams) time.Duration {
	return time.Minute + 10*time.Duration(float64(time.Second)*float64(p.Hosts*p.PerHost)/idealRate(p))
}

type fataler interface {
	Fatalf(format string, args ...any)
}

func checkSim(t fataler, p simParams, r simResult) {
	if err := simProblem(p, r); err != nil {
		t.Fatalf("%v: %v", p, err)
	}
}

// simProblem is what is wrong with a run, or nil.
func simProblem(p simParams, r simResult) error {
	if !r.finished {
		return fmt.Errorf("not finished in %v: %d of %d URLs fetched, %d went back late, %d calls", r.end.Sub(r.start), r.fetched, p.Hosts*p.PerHost, r.late, r.calls)
	}
	if p.Rate > 0 {
		_, width := politeness.TokenWindow(p.Rate, p.Burst)
		if err := checkBound(r, p.Rate, width); err != nil {
			return err
		}
	}
	if err := lateProblem(r); err != nil {
		return err
	}
	if n := p.Hosts * p.PerHost; r.missed*50 > n {
		return fmt.Errorf("%d of %d URLs missed their token's window (%d given a new token, %d went back)", r.missed, n, r.retoken, r.late)
	}
	if got, ideal := r.pagesPerSecond(loopBound(p)), idealRate(p); got < 0.9*ideal {
		return fmt.Errorf("%.1f pages/s, %.0f %% of the ideal %.1f (%d calls, %d late)", got, 100*got/ideal, ideal, r.calls, r.late)
	}
	return nil
}

// lateProblem: a URL went back twice for missing its token's window.
func lateProblem(r simResult) error {
	for u, n := range r.lateOf {
		if n > 1 {
			return fmt.Errorf("%s went back %d times for missing its window (%d late in all)", u, n, r.late)
		}
	}
	return nil
}

// A URL that misses its token's window (its loop waited for robots.txt,
// or fell behind) and is given a new one by its host keeps the host's
// bound: the same shapes, each take of a URL waiting up to three of its
// tokens' windows (2 s at most) before its request, with a chance drawn
// up to one in two. Every URL is fetched, and no host gets more requests in any span
// than its tokens allow. (A URL may go back twice here: each of its takes
// may wait again.)
func TestALateURLsNewTokenKeepsTheBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := drawSim(t)
		p.PerHost = min(p.PerHost, 30) // the bound shows in a host's first URLs as well as in its thousandth
		chance := rapid.Float64Range(0, 0.5).Draw(t, "stallChance")
		longest := 3 * politeness.LeastWindow
		if p.Rate > 0 {
			_, width := politeness.TokenWindow(p.Rate, p.Burst)
			longest = min(3*width, 2*time.Second) // longer than a fetch's timeout is no robots.txt's wait
		}
		stall := func(rnd *rand.Rand) time.Duration {
			if rnd.Float64() >= chance {
				return 0
			}
			return time.Duration(rnd.Int64N(int64(longest)) + 1)
		}
		r := runSim(t, p, simRules{stall: stall}, 20*simLimit(p))
		if !r.finished {
			t.Fatalf("%v: not finished: %d of %d URLs fetched, %d retokened, %d went back late", p, r.fetched, p.Hosts*p.PerHost, r.retoken, r.late)
		}
		if p.Rate > 0 {
			_, width := politeness.TokenWindow(p.Rate, p.Burst)
			if err := checkBound(r, p.Rate, width); err != nil {
				t.Fatalf("%v, stalls up to %v at a chance of %.2f: %v (%d retokened)", p, longest, chance, err, r.retoken)
			}
		}
	})
}

// The checks catch the two rules that livelocked crawls at high rates:
// a URL late when it waited past its token a quarter of its host's
// interval (at most half), whatever the burst; and pops that fill the
// buffer whatever the loops can start within the tokens' windows.
func TestTimingChecksCatchTheOldRules(t *testing.T) {
	// The shape: 3 hosts, 2 workers x 16 loops, 5 ms a page.
	shape := simParams{Rate: 100_000, Burst: 1000, Hosts: 3, PerHost: 400, Workers: 2, Loops: 16,
		Latency: 5 * time.Millisecond, RTT: time.Millisecond}
	if err := simProblem(shape, runSim(t, shape, simRules{}, simLimit(shape))); err != nil {
		t.Fatalf("%v: %v", shape, err)
	}
	oldLate := func(l *frontier.Lease, now time.Time) bool {
		interval := time.Duration(float64(time.Second) / shape.Rate)
		limit := min(max(interval/4, 100*time.Millisecond), interval/2)
		return now.Sub(l.NotBefore) > limit
	}
	if err := simProblem(shape, runSim(t, shape, simRules{late: oldLate}, simLimit(shape))); err == nil {
		t.Errorf("%v, lateness judged a quarter of an interval after the token: no check failed", shape)
	} else {
		t.Logf("the old lateness rule: %v", err)
	}
	fullBuffer := func(p *pace.Policy) { p.FillBuffer() } // pops fill the buffer
	slow := shape
	slow.Latency = 200 * time.Millisecond
	if err := simProblem(slow, runSim(t, slow, simRules{policy: fullBuffer}, simLimit(slow))); err == nil {
		t.Errorf("%v, pops that fill the buffer: no check failed", slow)
	} else {
		t.Logf("pops that fill the buffer: %v", err)
	}
}
