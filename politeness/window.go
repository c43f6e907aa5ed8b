package politeness

import (
	"math"
	"time"
)

// LeastWindow is the least time a token handed out ahead of its use is
// good for (TokenWindow). A token goes from Redis to a worker and waits
// there for a free fetch loop: a window much shorter than a round trip
// and a goroutine's wake-up could not be kept by any machine, and at rates
// above 50 requests a second a host's half interval is shorter than this.
const LeastWindow = 10 * time.Millisecond

// TokenWindow is the window of a token of a bucket of rate requests a
// second and burst, handed out ahead of its use, as a crawl's pop hands
// them out (tokens.lua's tb_window is the same arithmetic in Lua).
//
// The pop gives each token a slot: its place in the bucket's schedule,
// slots an interval (1/rate) apart, the first no earlier than the bucket's
// theoretical arrival time. The token's request may go from early before
// its slot until width after that (slot - early ≤ t < slot - early +
// width). Requests that keep to their windows hold the bucket's bound,
// rounded to the nearest whole request: in any span of time W, a host gets
// at most ⌈(W + width) · rate⌉ of them, which is burst + rate·W rounded
// (halves down) while the width is (burst - ½) intervals.
//
// The width is (burst - ½) intervals, or LeastWindow where that is
// longer; the token may go late by half an interval (or LeastWindow where
// that is longer), and early by the rest, so that a bucket of burst b
// still lets b requests go at once. Worked numbers: at 2 requests a second
// and a burst of 5, a token is good from 2 s before its slot to 250 ms
// after it; at 0.5/s and a burst of 1, for 1 s from its slot; at 2 000/s
// and a burst of 10, for 10 ms from its slot (4.75 ms is too short to
// keep, so the bound is as for a burst of 20); at 100 000/s and a burst of
// 1 000, for 10 ms from its slot.
//
// A rate of 0 or less, or Inf, has no tokens: both are 0.
func TokenWindow(rate float64, burst int) (early, width time.Duration) {
	if rate <= 0 || math.IsInf(rate, 1) || Limit(rate) == Inf {
		return 0, 0
	}
	least := float64(LeastWindow) / float64(time.Millisecond)
	interval := 1000 / rate // ms, as tokens.lua counts
	w := math.Max((float64(max(burst, 1))-0.5)*interval, least)
	late := math.Max(least, interval/2)
	return ms(math.Max(0, w-late)), ms(w)
}

// ms is a float number of milliseconds as a Duration.
func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
