package alternatives_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redcrawl/crawler/alternatives"
	"github.com/redcrawl/crawler/internal/redistest"
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
