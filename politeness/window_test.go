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
	"github.com/redis/go-redis/v9"
)

// A token's window, as the doc comment works it out.
func TestTokenWindow(t *testing.T) {
	for _, c := range []struct {
		rate         float64
		burst        int
		early, width time.Duration
	}{
		{2, 5, 2 * time.Second, 2250 * time.Millisecond},              // 4.5 intervals: 250 ms after the slot
		{0.5, 1, 0, time.Second},                                      // half an interval
		{2000, 10, 0, 10 * time.Millisecond},                          // 4.75 ms is under LeastWindow
		{100_000, 1000, 0, 10 * time.Millisecond},                     // 9.995 ms likewise
		{100, 1000, 9985 * time.Millisecond, 9995 * time.Millisecond}, // 999.5 intervals, of which LeastWindow (over half an interval) late
		{math.Inf(1), 3, 0, 0},                                        // no limit, no tokens
		{0, 1, 0, 0},
	} {
		early, width := politeness.TokenWindow(c.rate, c.burst)
		if early != c.early || width != c.width {
			t.Errorf("TokenWindow(%v, %d) = %v, %v; want %v, %v", c.rate, c.burst, early, width, c.early, c.width)
		}
	}
}

// The window's late part is never under half an interval or LeastWindow,
// and never over the width: a token's request may always go at its slot.
func TestTokenWindowLeavesTheSlotInside(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10_000 {
		rate := math.Exp(rng.Float64()*math.Log(1e7)) / 10 // 0.1 to 10^6
		burst := 1 + rng.IntN(5000)
		early, width := politeness.TokenWindow(rate, burst)
		interval := time.Duration(float64(time.Second) / rate)
		late := width - early
		if early < 0 || late < politeness.LeastWindow-time.Microsecond || late < interval/2-time.Microsecond {
			t.Fatalf("TokenWindow(%v, %d) = %v, %v: late part %v", rate, burst, early, width, late)
		}
		if want := max(time.Duration((float64(burst)-0.5)*float64(interval)), politeness.LeastWindow); width < want-time.Microsecond {
			t.Fatalf("TokenWindow(%v, %d): width %v, under the bucket's %v", rate, burst, width, want)
		}
	}
}

// tokens.lua's tb_window is politeness.TokenWindow: the pop decides with
// the arithmetic the documentation and the timing test hold it to.
func TestTokenWindowInLuaIsTheSame(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		tokens, err := politeness.Lua.Join("tokens")
		if err != nil {
			t.Fatal(err)
		}
		script := redis.NewScript(tokens + `
local early, width = tb_window(tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
return {string.format('%.6f', early), string.format('%.6f', width)}`)
		rng := rand.New(rand.NewPCG(5, 6))
		for range 300 {
			rate := math.Exp(rng.Float64()*math.Log(1e7)) / 10
			burst := 1 + rng.IntN(5000)
			v, err := script.Run(context.Background(), s.Client, nil, rate, burst, politeness.LeastWindow.Milliseconds()).StringSlice()
			if err != nil {
				t.Fatal(err)
			}
			early, width := politeness.TokenWindow(rate, burst)
			if got := [2]string{v[0], v[1]}; !near(got[0], early) || !near(got[1], width) {
				t.Fatalf("rate %v burst %d: Lua says %v ms, Go %v, %v", rate, burst, got, early, width)
			}
		}
	})
}

// near: the Lua's milliseconds (text) are d, to the nanosecond's rounding.
func near(ms string, d time.Duration) bool {
	var v float64
	if _, err := fmt.Sscan(ms, &v); err != nil {
		return false
	}
	return math.Abs(v*1e6-float64(d)) <= 2
}
