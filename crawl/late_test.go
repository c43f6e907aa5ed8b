package crawl

import (
	"testing"
	"time"
)

// A URL fetched late past its token stays under its host's interval late,
// so that no second holds more than rate + burst requests: a quarter of
// the interval, at least 100 ms, but under half the interval.
func TestALateFetchStaysUnderTheHostsInterval(t *testing.T) {
	for interval, want := range map[time.Duration]time.Duration{
		2 * time.Second:        500 * time.Millisecond, // a quarter
		400 * time.Millisecond: 100 * time.Millisecond,
		200 * time.Millisecond: 100 * time.Millisecond,   // at least 100 ms
		25 * time.Millisecond:  12500 * time.Microsecond, // 40/s: under the interval
	} {
		if got := lateLimit(interval); got != want {
			t.Errorf("lateLimit(%v) = %v; want %v", interval, got, want)
		}
		if lateLimit(interval) >= interval {
			t.Errorf("lateLimit(%v) = %v: a late fetch could bunch with the next", interval, lateLimit(interval))
		}
	}
}
