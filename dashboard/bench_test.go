package dashboard_test

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/dashboard"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
)

// BenchmarkRefresh measures what one refresh of the dashboard (one state
// of its stream) costs Redis: commands by name (INFO commandstats) and
// Redis CPU, on a crawl of 1 000 hosts × 10 URLs queued with a Bloom
// filter sized for a million URLs and 20 events: every state read whole
// (bloom=every), and as the stream reads them, the Bloom filter every
// BloomEvery (bloom=cached: one refresh a second). Run with -benchtime 50x.
func BenchmarkRefresh(b *testing.B) {
	for _, cached := range []bool{false, true} {
		name := "bloom=every"
		if cached {
			name = "bloom=cached"
		}
		b.Run(name, func(b *testing.B) { refresh(b, cached) })
	}
}

func refresh(b *testing.B, cached bool) {
	s := redistest.Real(b)
	ctx := context.Background()
	s.Client.FlushAll(ctx)
	set := crawl.DefaultSettings()
	var seeds []*url.URL
	for h := 0; h < 1000; h++ {
		for p := 0; p < 10; p++ {
			u, _ := url.Parse(fmt.Sprintf("http://host-%04d.example.org/page-%d.html", h, p))
			seeds = append(seeds, u)
		}
	}
	if _, err := crawl.Seed(ctx, s.Client, "b", set, seeds); err != nil {
		b.Fatal(err)
	}
	fr, err := frontier.New(s.Client, "b", frontier.Options{Shards: 1})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		fr.AddEvent(ctx, frontier.Event{Kind: frontier.EventPause, Text: "an event"})
	}
	s.Client.ConfigResetStat(ctx)
	cpu0 := redistest.CPU(b, s.Client)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var err error
		if cached && i%int(dashboard.BloomEvery/time.Second) != 0 {
			_, err = dashboard.ReadWithoutBloom(ctx, s.Client, "b")
		} else {
			_, err = dashboard.Read(ctx, s.Client, "b")
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := redistest.CPU(b, s.Client) - cpu0
	stats := s.Client.Info(ctx, "commandstats").Val()
	calls := map[string]int64{}
	var total int64
	re := regexp.MustCompile(`^cmdstat_([^:]+):calls=(\d+)`)
	for _, line := range strings.Split(stats, "\r\n") {
		if m := re.FindStringSubmatch(line); m != nil && m[1] != "info" && m[1] != "config|resetstat" {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			calls[m[1]] = n
			total += n
		}
	}
	names := make([]string, 0, len(calls))
	for k := range calls {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return calls[names[i]] > calls[names[j]] })
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, float64(calls[k])/float64(b.N)))
	}
	b.ReportMetric(float64(total)/float64(b.N), "redis-commands/refresh")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "redis-µs/refresh")
	b.Logf("commands a refresh: %s (the idle server's cron included in the CPU: ~%v over the run)", strings.Join(parts, ", "), time.Duration(b.Elapsed()).Round(time.Millisecond))
}
