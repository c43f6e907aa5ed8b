package alternatives_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redcrawl/crawler/alternatives"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"
)

const (
	rate  = 20
	burst = 5
)

// One storm of requests from four clients, on redis-server in real time,
// fed to the five limiters at once: the most each let through in any
// second, by its own clock. The token bucket and the leaky meter never
// pass rate + burst; the sliding log never passes the rate; the queue
// spaces its requests an interval apart; the fixed window lets through
// about twice its rate in the second that straddles a window's edge.
func TestFourLimitersOnOneTrace(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	ls := alternatives.Limiters(s.Client, "trace:", rate, burst)
	redisNow := s.Client.Time(ctx).Val()
	start := time.Now().Add(redisNow.Truncate(time.Second).Add(time.Second).Sub(redisNow)) // a whole second of Redis's clock
	let, err := alternatives.Replay(ctx, alternatives.StormTrace(4), start, "host", ls)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		ts := let[l.Name()]
		most := testsite.MaxInWindow(ts, time.Second)
		least, cv := alternatives.Gaps(ts)
		t.Logf("%-26s let %3d through; most in any second %2d, in any 100 ms %2d; gaps: least %v, cv %.2f",
			l.Name(), len(ts), most, testsite.MaxInWindow(ts, 100*time.Millisecond), least.Round(time.Microsecond), cv)
		switch l.Name() {
		case "token bucket (RedCrawl's)", "leaky bucket (meter)":
			if most > rate+burst {
				t.Errorf("%s let %d through in a second; its bound is rate + burst, %d", l.Name(), most, rate+burst)
			}
		case "leaky bucket (queue)":
			if least < time.Second/rate-time.Microsecond {
				t.Errorf("%s let two through %v apart; its interval is %v", l.Name(), least, time.Second/rate)
			}
		case "sliding-window log":
			if most > rate {
				t.Errorf("%s let %d through in a second; its limit is %d", l.Name(), most, rate)
			}
		case "fixed window":
			if most < rate*9/5 || most > 2*rate {
				t.Errorf("%s let %d through in its busiest second; a storm across a window's edge should get about 2 × %d", l.Name(), most, rate)
			}
		}
	}
}

// The same bounds over the whole range, on miniredis with its clock set
// to each request's moment: limits of 1 to 100 requests a window of
// 100 ms to 100 s (rates 0.01/s to 1000/s), bursts of 1 to 50, random
// arrivals. In any span W the token bucket and the meter let through at
// most burst + rate·W; the sliding log at most its limit in any window;
// the fixed window at most twice its limit; the queue's departures are an
// interval apart.
func TestLimitersBoundsOverTheRange(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			rt.Fatal(err)
		}
		defer m.Close()
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		defer c.Close()
		ctx := context.Background()
		limit := rapid.IntRange(1, 100).Draw(rt, "limit")
		window := time.Duration(rapid.Int64Range(100, 100_000).Draw(rt, "window ms")) * time.Millisecond
		b := rapid.IntRange(1, 50).Draw(rt, "burst")
		r := float64(limit) / window.Seconds()
		ls := alternatives.WindowLimiters(c, "p:", r, b, limit, window)
		now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
		let := alternatives.Let{}
		for range rapid.IntRange(1, 150).Draw(rt, "requests") {
			// gaps from nothing to three windows, most of them short
			now = now.Add(time.Duration(rapid.Float64Range(0, 1).Draw(rt, "gap") * rapid.Float64Range(0, 1).Draw(rt, "gap") * 3 * float64(window)))
			m.SetTime(now)
			for _, l := range ls {
				ok, at, err := l.Take(ctx, "h")
				if err != nil {
					rt.Fatal(err)
				}
				if ok {
					let[l.Name()] = append(let[l.Name()], at)
				}
			}
		}
		for _, l := range ls {
			ts := let[l.Name()]
			switch l.Name() {
			case "token bucket (RedCrawl's)", "leaky bucket (meter)":
				for _, w := range []time.Duration{window / 10, window, 10 * window} {
					if got, most := testsite.MaxInWindow(ts, w), float64(b)+r*w.Seconds(); float64(got) > most+1e-9 {
						rt.Fatalf("%s: %d in a span of %v; at most burst %d + %.4g/s × it = %.4g", l.Name(), got, w, b, r, most)
					}
				}
			case "leaky bucket (queue)":
				if least, _ := alternatives.Gaps(ts); len(ts) > 2 && least < time.Duration(float64(time.Second)/r)-time.Microsecond {
					rt.Fatalf("%s: two departures %v apart; the interval is %v", l.Name(), least, time.Duration(float64(time.Second)/r))
				}
			case "sliding-window log":
				if got := testsite.MaxInWindow(ts, window); got > limit {
					rt.Fatalf("%s: %d in a window of %v; the limit is %d", l.Name(), got, window, limit)
				}
			case "fixed window":
				if got := testsite.MaxInWindow(ts, window); got > 2*limit {
					rt.Fatalf("%s: %d in a span of %v; at most twice the limit, %d", l.Name(), got, window, 2*limit)
				}
			}
		}
	})
}

// What each limiter keeps a host in Redis, on redis-server: after one
// request each of 10 000 hosts, and after a full window's requests (20)
// of 500 hosts; at 20 requests a window of 2 000 s (0.01/s, burst 5), so
// that no key lapses while they are counted (an idle host's key lapses
// once it would be full again: an idle host costs nothing). The sliding
// log keeps a member a request let through, so it grows with the rate;
// the others keep two numbers (the token bucket one) whatever the rate.
func TestWhatALimiterKeepsAHost(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	const limit, window = 20, 2000 * time.Second
	r := limit / window.Seconds()
	bytes := map[string][2]float64{}
	for i, each := range []int{1, limit} {
		hosts := []int{10_000, 500}[i]
		prefix := fmt.Sprintf("mem%d:", i)
		ls := alternatives.WindowLimiters(s.Client, prefix, r, burst, limit, window)
		for _, l := range ls {
			if err := alternatives.Fill(ctx, l, hosts, each); err != nil {
				t.Fatal(err)
			}
		}
		for j, l := range ls {
			kind := []string{"tb", "lm", "lq", "fw", "sl"}[j]
			b, n, err := alternatives.BytesAKey(ctx, s.Client, prefix+kind+":*")
			if err != nil || n != hosts {
				t.Fatalf("%s: %d keys of %d hosts (%v)", l.Name(), n, hosts, err)
			}
			v := bytes[l.Name()]
			v[i] = b
			bytes[l.Name()] = v
		}
	}
	for _, l := range alternatives.Limiters(s.Client, "", r, burst) {
		v := bytes[l.Name()]
		t.Logf("%-26s %4.0f bytes a host after a request, %5.0f after a full window (%d)", l.Name(), v[0], v[1], limit)
	}
	tb, sl := bytes["token bucket (RedCrawl's)"], bytes["sliding-window log"]
	if sl[1] < 4*tb[1] || tb[1] > 1.5*tb[0] {
		t.Errorf("a full window: the sliding log keeps %.0f bytes a host, the token bucket %.0f (after one request %.0f); "+
			"want the log's to grow with the rate and the bucket's not", sl[1], tb[1], tb[0])
	}
}
