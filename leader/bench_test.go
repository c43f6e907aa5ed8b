package leader_test

import (
	"context"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
)

func BenchmarkLockAcquireRelease(b *testing.B) {
	s := redistest.Real(b)
	rt := redistest.RoundTrips(s.Client)
	ctx := context.Background()
	// Load the scripts first, so EVALSHA's one-time NOSCRIPT fallback is not counted.
	l, _ := leader.Obtain(ctx, s.Client, "b:{lock}", "bench", time.Minute)
	l.Release(ctx)
	rt.Store(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := leader.Obtain(ctx, s.Client, "b:{lock}", "bench", time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/op")
}
