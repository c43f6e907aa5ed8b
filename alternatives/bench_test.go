package alternatives_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcrawl/crawler/alternatives"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
)

// The Redis time a limiter's call costs (INFO commandstats: µs inside
// EVALSHA a call), on redis-server, over 1 000 hosts at 20/s, burst 5:
//
//	go test -run '^$' -bench Limiter -benchtime 20000x ./alternatives
func BenchmarkLimiter(b *testing.B) {
	s := redistest.Real(b)
	ctx := context.Background()
	for _, l := range alternatives.Limiters(s.Client, "bench:", rate, burst) {
		b.Run(l.Name(), func(b *testing.B) {
			if err := s.Client.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				if _, _, err := l.Take(ctx, fmt.Sprint("h", i%1000)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			st := redistest.CommandStats(b, s.Client)["evalsha"]
			if st.Calls < int64(b.N) {
				b.Fatalf("%d EVALSHA calls for %d takes", st.Calls, b.N)
			}
			b.ReportMetric(float64(st.Usec)/float64(st.Calls), "redis-µs/call")
		})
	}
}

// How long taking the lock takes (and releasing it, not counted): one
// lock on one redis-server (leader.Obtain, as the scheduler's election
// takes it) against Redlock over 3 and 5 (all on this machine's loopback:
// a real deployment's masters are a network apart, and Redlock waits for
// the slowest of a majority).
//
//	go test -run '^$' -bench Acquire -benchtime 3000x ./alternatives
func BenchmarkAcquire(b *testing.B) {
	ctx := context.Background()
	b.Run("one lock", func(b *testing.B) {
		s := redistest.Real(b)
		var took time.Duration
		for i := range b.N {
			start := time.Now()
			l, err := leader.Obtain(ctx, s.Client, fmt.Sprint("res", i%10), "b", time.Minute)
			took += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			l.Release(ctx)
		}
		b.ReportMetric(float64(took.Microseconds())/float64(b.N), "acquire-µs")
	})
	for _, n := range []int{3, 5} {
		b.Run(fmt.Sprintf("redlock over %d", n), func(b *testing.B) {
			rl := &alternatives.Redlock{}
			for range n {
				rl.Masters = append(rl.Masters, redistest.Real(b).Client)
			}
			var took time.Duration
			for i := range b.N {
				start := time.Now()
				g, err := rl.Lock(ctx, fmt.Sprint("res", i%10), time.Minute)
				took += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				rl.Unlock(ctx, g)
			}
			b.ReportMetric(float64(took.Microseconds())/float64(b.N), "acquire-µs")
		})
	}
}
