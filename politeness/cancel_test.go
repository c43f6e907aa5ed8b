package politeness_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/politeness"
	"golang.org/x/time/rate"
)

// Cancel's oracle: random sequences of reservations, some cancelled, on
// the same virtual clock as x/time/rate. Cancel runs tokens.lua's
// tb_refund, the crawl pop's refund: a reservation's tokens go back when
// they are the bucket's last (nothing taken after them that still holds)
// and their time has not come, and then the bucket is exactly as if the
// reservation had never been made. So the oracle is a local rate.Limiter
// fed the same reservations less those given back (made anew after each
// cancel, the reservations kept replayed at their times): every later
// decision must be its own to the microsecond. A cancel of tokens taken
// before others still held gives nothing back. (x/time/rate's own Cancel
// is not the oracle: it keeps one lastEvent, which a cancel moves back
// only while the time to act is ahead, so it restores less or more than
// the tokens last taken; the crawl needs the exact rule.)
func TestCancelIsAsIfTheReservationWasNeverMade(t *testing.T) {
	s := redistest.Mini(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(8, 5))
	rates := []float64{0.1, 0.5, 1, 2, 7.5, 50, 333.3}
	type made struct {
		r         politeness.Reservation
		at        time.Time
		n         int
		cancelled bool // cancelled while others held after it: nothing went back
	}
	const seqs, steps = 80, 60
	back, kept, decisions := 0, 0, 0
	for seq := 0; seq < seqs; seq++ {
		r := rates[rng.IntN(len(rates))]
		b := 1 + rng.IntN(4)
		interval := time.Duration(float64(time.Second) / r)
		key := fmt.Sprintf("t:{cancel}:%d", seq)
		lim := politeness.NewLimiter(s.Client, politeness.Limit(r), b)
		var held []made // reservations whose tokens are taken, in order
		oracle := func() *rate.Limiter {
			o := rate.NewLimiter(rate.Limit(r), b)
			for _, m := range held {
				o.ReserveN(m.at, m.n)
			}
			return o
		}
		now := time.Unix(1_700_000_000+int64(seq)*1000, 0)
	sequence:
		for step := 0; step < steps; step++ {
			if rng.IntN(3) == 0 {
				now = now.Add(time.Duration(rng.IntN(int(2e6/r))) * time.Microsecond) // up to two intervals
			}
			s.Mini.SetTime(now)
			var open []int
			for i, m := range held {
				if !m.cancelled {
					open = append(open, i)
				}
			}
			if len(open) == 0 || rng.IntN(2) == 0 {
				n := 1 + rng.IntN(b)
				want := oracle().ReserveN(now, n)
				got, err := lim.ReserveN(ctx, key, n, -1)
				if err != nil {
					t.Fatal(err)
				}
				// The Limiter holds its tat as µs since 1970 in a float64,
				// to a quarter of a µs: each token taken or given back may
				// round it by an eighth, so a bucket's delays stand up to
				// that much a step apart from x/time/rate's (in ns).
				tol := time.Microsecond + time.Duration(step)*125*time.Nanosecond
				if d := got.Delay - want.DelayFrom(now); !got.OK || !want.OK() || d <= -tol || d >= tol {
					if math.Abs(oracle().TokensAt(now)-float64(n)) < r*1e-6 {
						break sequence // a tie neither rounding can call
					}
					t.Fatalf("seq %d step %d (r=%v b=%d n=%d): ReserveN = %+v, x/time/rate without the cancelled says %v",
						seq, step, r, b, n, got, want.DelayFrom(now))
				}
				held = append(held, made{r: got, at: now, n: n})
				decisions++
				continue
			}
			i := open[len(open)-1] // mostly the latest
			if rng.IntN(3) == 0 {
				i = open[rng.IntN(len(open))]
			}
			m := held[i]
			got, err := lim.Cancel(ctx, key, m.r)
			if err != nil {
				t.Fatal(err)
			}
			last, ahead := i == len(held)-1, !m.r.At.Add(m.r.Delay).Before(now)
			var want time.Duration
			if last && ahead {
				want = time.Duration(m.n) * interval
			}
			if d := got - want; d <= -time.Microsecond || d >= time.Microsecond {
				t.Fatalf("seq %d step %d (r=%v b=%d): cancelling reservation %d of %d (n=%d, its time ahead: %v) gave back %v; want %v",
					seq, step, r, b, i+1, len(held), m.n, ahead, got, want)
			}
			if want > 0 {
				held = held[:i]
				back++
			} else {
				held[i].cancelled = true
				kept++
			}
		}
	}
	t.Logf("%d reservations, %d cancels gave back, %d could not", decisions, back, kept)
	if back < 300 || kept < 100 {
		t.Fatalf("%d cancels gave back and %d could not: want 300 and 100 or more, to say the rule was tried", back, kept)
	}
}

// Cancel on either Redis: the bucket's last token goes back (the next
// reservation waits an interval less), an earlier one does not (a token
// taken after it would move), nor one whose time has come.
func TestCancelGivesBackOnlyTheLastTokens(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		lim := politeness.NewLimiter(s.Client, 0.001, 1) // a token each 1000 s: no refill during the test
		key := "t:{cancel}:host"
		first, err := lim.ReserveN(ctx, key, 1, -1) // the full bucket's token: its time is now
		if err != nil || !first.OK {
			t.Fatal(first, err)
		}
		second, err := lim.ReserveN(ctx, key, 1, -1)
		if err != nil || !second.OK {
			t.Fatal(second, err)
		}
		third, err := lim.ReserveN(ctx, key, 1, -1)
		if err != nil || !third.OK {
			t.Fatal(third, err)
		}
		if back, err := lim.Cancel(ctx, key, second); err != nil || back != 0 {
			t.Fatalf("cancelling the second of three gave back %v, %v; want nothing: the third was taken after it", back, err)
		}
		if back, err := lim.Cancel(ctx, key, third); err != nil || back != 1000*time.Second {
			t.Fatalf("cancelling the last gave back %v, %v; want an interval, 1000s", back, err)
		}
		if back, err := lim.Cancel(ctx, key, first); err != nil || back != 0 {
			t.Fatalf("cancelling a reservation whose time has passed gave back %v, %v; want nothing", back, err)
		}
		next, err := lim.ReserveN(ctx, key, 1, -1)
		if err != nil || !next.OK || next.Delay < 1999*time.Second || next.Delay > 2000*time.Second {
			t.Fatalf("after the cancel, the next reservation waits %+v, %v; want the third's place, 2000s", next, err)
		}
	})
}
