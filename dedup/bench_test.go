package dedup_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/internal/redistest"
)

func BenchmarkAddNew(b *testing.B) {
	for _, size := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s := redistest.Real(b)
			ctx := context.Background()
			f, err := dedup.Open(ctx, s.Client, "b:{seen}", dedup.Params{Capacity: 10_000_000, FPRate: 0.01})
			if err != nil {
				b.Fatal(err)
			}
			f.AddNew(ctx, []string{"warm-up"})
			rt := redistest.RoundTrips(s.Client)
			batch := make([]string, size)
			cpu := redistest.CPU(b, s.Client)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := range batch {
					batch[j] = fmt.Sprintf("https://bench.example/%d/%d", i, j)
				}
				if _, err := f.AddNew(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rt.Load())/float64(b.N), "roundtrips/op")
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "urls/s")
			b.ReportMetric(float64((redistest.CPU(b, s.Client)-cpu).Nanoseconds())/float64(b.N*size)/1e3, "redis-µs/url")
		})
	}
}

// BenchmarkMemoryPerURL compares what Redis reports (MEMORY USAGE) for one
// million URLs in the Bloom filter (n = 1M, p = 1 %) against a SET of their
// hex SHA-1 fingerprints, as scrapy-redis keeps them. Run with -benchtime=1x.
func BenchmarkMemoryPerURL(b *testing.B) {
	const n = 1_000_000
	s := redistest.Real(b)
	ctx := context.Background()
	f, err := dedup.Open(ctx, s.Client, "b:{mem}:seen", dedup.Params{Capacity: n, FPRate: 0.01})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pipe := s.Client.Pipeline()
		batch := make([]string, 0, 1024)
		for u := 0; u < n; u++ {
			url := fmt.Sprintf("https://www.example.com/docs/section-%d/page-%d.html", u%997, u)
			batch = append(batch, url)
			sum := sha1.Sum([]byte(url))
			pipe.SAdd(ctx, "b:{mem}:sha1", hex.EncodeToString(sum[:]))
			if len(batch) == cap(batch) || u == n-1 {
				if _, err := f.AddNew(ctx, batch); err != nil {
					b.Fatal(err)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	b.StopTimer()
	st, err := f.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var bloomBytes int64
	keys, _ := s.Client.Keys(ctx, "b:{mem}:seen*").Result() // a benchmark's private server: KEYS is fine here
	for _, k := range keys {
		bloomBytes += s.Client.MemoryUsage(ctx, k, 0).Val()
	}
	setBytes := s.Client.MemoryUsage(ctx, "b:{mem}:sha1", 0).Val()
	b.ReportMetric(float64(bloomBytes)/n, "bloom-bytes/url")
	b.ReportMetric(float64(setBytes)/n, "sha1set-bytes/url")
	b.ReportMetric(st.EstimatedFPRate, "est-fp-rate")
	b.ReportMetric(float64(len(st.Layers)), "layers")
}
