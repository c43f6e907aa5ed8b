package dashboard

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// BenchmarkRefresh measures what the dashboard costs Redis, panel by
// panel and for a state as the stream reads them (the slow panels every
// SlowEvery: one state in ten at one a second): commands (INFO
// commandstats), their execution time (commandstats' usec) and Redis's
// CPU, on a crawl of 1 000 hosts × 10 URLs queued, a Bloom filter sized
// for a million URLs, 150 events, three workers with heartbeats, a lock
// held and five hosts paused; over 1 and 4 shards. Run with -benchtime 50x.
func BenchmarkRefresh(b *testing.B) {
	for _, shards := range []int{1, 4} {
		b.Run(fmt.Sprintf("shards=%d", shards), func(b *testing.B) {
			s := redistest.Real(b)
			ctx := context.Background()
			s.Client.FlushAll(ctx)
			benchCrawl(b, s.Client, shards)
			v, err := open(ctx, s.Client, "b")
			if err != nil {
				b.Fatal(err)
			}
			st := &State{}
			measure := func(name string, fn func() error) {
				b.Run(name, func(b *testing.B) {
					costOf(b, s, fn)
				})
			}
			measure("settings", func() error { _, err := open(ctx, s.Client, "b"); return err })
			for _, p := range panels {
				name := p.name
				if p.slow {
					name += " (slow)"
				}
				measure(strings.ReplaceAll(name, " ", "_"), func() error { return p.read(ctx, v, st) })
			}
			i := 0
			measure("a_state_as_streamed", func() error {
				slow := i%int(SlowEvery/time.Second) == 0
				i++
				if slow {
					if _, err := open(ctx, s.Client, "b"); err != nil {
						return err
					}
				}
				for _, p := range panels {
					if !p.slow || slow {
						if err := p.read(ctx, v, st); err != nil {
							return err
						}
					}
				}
				return nil
			})
		})
	}
}

// benchCrawl seeds crawl "b" as BenchmarkRefresh describes.
func benchCrawl(b *testing.B, c *redis.Client, shards int) {
	ctx := context.Background()
	set := settings.Default()
	set.Shards, set.Rate, set.Burst = shards, 2, 1
	var seeds []*url.URL
	for h := 0; h < 1000; h++ {
		for p := 0; p < 10; p++ {
			u, _ := url.Parse(fmt.Sprintf("http://host-%04d.example.org/page-%d.html", h, p))
			seeds = append(seeds, u)
		}
	}
	if _, err := admin.Seed(ctx, c, "b", set, seeds); err != nil {
		b.Fatal(err)
	}
	fr, err := crawl.OpenFrontier(ctx, c, "b", set)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 150; i++ {
		kind := events.Pause
		if i%10 == 0 {
			kind = events.Lead
		}
		fr.Events.Add(ctx, events.Event{Kind: kind, Text: "host host-0001.example.org paused 1s for every worker, after a 429"})
	}
	for i := 1; i <= 3; i++ {
		w := fmt.Sprintf("w%d", i)
		fr.Registry.Register(ctx, w)
		fr.Registry.Heartbeat(ctx, w, int64(100*i), nil)
	}
	for h := 0; h < 5; h++ {
		fr.Hosts.Pause(ctx, fmt.Sprintf("host-%04d.example.org", h), time.Hour, "a 429")
	}
	if _, err := leader.Obtain(ctx, c, fr.LeaderKey(), "w1", time.Hour); err != nil {
		b.Fatal(err)
	}
}

// costOf runs fn b.N times and reports Redis's commands, their execution
// time and its CPU, each a call.
func costOf(b *testing.B, s *redistest.Server, fn func() error) {
	ctx := context.Background()
	s.Client.ConfigResetStat(ctx)
	cpu0 := redistest.CPU(b, s.Client)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := fn(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := redistest.CPU(b, s.Client) - cpu0
	calls, usec, total := map[string]int64{}, int64(0), int64(0)
	for name, st := range redistest.CommandStats(b, s.Client) {
		if name != "info" && name != "config|resetstat" {
			calls[name] = st.Calls
			total, usec = total+st.Calls, usec+st.Usec
		}
	}
	names := make([]string, 0, len(calls))
	for k := range calls {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		return calls[names[i]] > calls[names[j]] || calls[names[i]] == calls[names[j]] && names[i] < names[j]
	})
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f", strings.ToUpper(k), float64(calls[k])/float64(b.N)))
	}
	b.ReportMetric(float64(total)/float64(b.N), "commands/op")
	b.ReportMetric(float64(usec)/float64(b.N), "exec-µs/op")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "redis-cpu-µs/op")
	b.ReportMetric(0, "ns/op")
	b.Logf("commands: %s", strings.Join(parts, ", "))
}
