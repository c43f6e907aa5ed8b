package politeness_test

import (
	"context"
	"testing"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/politeness"
)

func BenchmarkAllow(b *testing.B) {
	s := redistest.Real(b)
	rt := redistest.RoundTrips(s.Client)
	ctx := context.Background()
	lim := politeness.NewLimiter(s.Client, 1e9, 1000) // always admits: measures the script, not waiting
	lim.Allow(ctx, "b:{bucket}")
	rt.Store(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := lim.Allow(ctx, "b:{bucket}"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/op")
}
