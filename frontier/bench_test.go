package frontier_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/perhost"
	"github.com/redcrawl/crawler/frontier/recrawl"
	"github.com/redcrawl/crawler/internal/redistest"
)

// BenchmarkExchange is the frontier's share of a crawl, without the
// crawl: each op is one exchange that ends 8 pages — each with a 300-byte
// result record and 3 links, 1 new and 2 already seen, as the test site's
// crawls send — and pops 8 more, of 8 hosts. It reports Redis's CPU per
// page (INFO, so socket and event-loop time included) and the time spent
// inside the script (commandstats), which is what Lua changes move.
func BenchmarkExchange(b *testing.B) {
	benchExchange(b, exchangeShape{batch: 8, hosts: 8, seeds: 4})
}

// BenchmarkExchangeFloor is the least Redis work a page needs: the
// exchange alone, at the most pages a call a worker sends (128), no
// politeness, no revisit state; each page three links, one of them new.
// A crawl's Redis CPU a page, set against it, is what the rest of the
// crawl (heartbeats, sweeps, smaller calls, robots.txt) adds.
func BenchmarkExchangeFloor(b *testing.B) {
	benchExchange(b, exchangeShape{batch: 128, hosts: 8, seeds: 32})
}

// BenchmarkExchangePolite is BenchmarkExchange at the polite path's shape:
// 1 000 hosts, each URL popped with its host's token (rate 100/s, burst
// 1, so that a host has one again by its next turn), 46 pages a call (as
// the 960-host crawl's workers send), one URL a host. Each page has a
// visit besides its record and links.
func BenchmarkExchangePolite(b *testing.B) {
	benchExchange(b, exchangeShape{batch: 46, hosts: 1000, seeds: 20, rate: 100, visits: true})
}

// BenchmarkExchangePoliteIP is BenchmarkExchangePolite with politeness
// per server address (Policy.PerAddress), each host at an address of its
// own (stored before, as the workers do): what taking an address's token
// beside the host's costs a pop (addrs.lua), without its limit changing a
// pop's URLs.
func BenchmarkExchangePoliteIP(b *testing.B) {
	benchExchange(b, exchangeShape{batch: 46, hosts: 1000, seeds: 20, rate: 100, visits: true, ip: true})
}

// BenchmarkExchangePoliteCapped is BenchmarkExchangePolite with a cap of
// 2 requests in flight a host (Policy.HostConcurrency): what taking a
// host's slot beside its token costs a pop, and ending it a finished page
// (hostslots.lua), without the cap holding a host back.
func BenchmarkExchangePoliteCapped(b *testing.B) {
	benchExchange(b, exchangeShape{batch: 46, hosts: 1000, seeds: 20, rate: 100, visits: true, conc: 2})
}

// BenchmarkExchangePriorities is BenchmarkExchangePolite with every host's
// URLs at three priorities (-3, 0 and 3: seeds and new links alike), each
// level a list of its own: what priorities cost an exchange.
func BenchmarkExchangePriorities(b *testing.B) {
	benchExchange(b, exchangeShape{batch: 46, hosts: 1000, seeds: 20, rate: 100, visits: true, priorities: true})
}

// exchangeShape is what a BenchmarkExchange op carries.
type exchangeShape struct {
	batch, hosts, seeds int     // pages a call; hosts, and URLs seeded each
	rate                float64 // each host's (0: no limit)
	visits              bool    // each page leaves a visit for its revisit
	priorities          bool    // URLs at priorities -3, 0 and 3, by turns
	ip                  bool    // politeness per address, an address a host
	conc                int     // requests in flight a host (0: no cap)
}

// level is the priority of the n-th URL of a shape with priorities.
func (sh exchangeShape) level(n int) int {
	if !sh.priorities {
		return 0
	}
	return 3 * (n%3 - 1)
}

func benchExchange(b *testing.B, sh exchangeShape) {
	s := redistest.Real(b)
	ctx := context.Background()
	s.Client.FlushAll(ctx)
	s.Client.HSet(ctx, keyspace.KeysFor("b").Config, "scope", "host") // the crawl exists
	o := frontier.Options{Shards: 1, Policy: frontier.Policy{HostRate: sh.rate, HostBurst: 1, PerAddress: sh.ip, HostConcurrency: sh.conc}}
	f, err := frontier.Create(ctx, s.Client, "b", o, dedup.Params{Capacity: 1_000_000, FPRate: 0.001})
	if err != nil {
		b.Fatal(err)
	}
	var seeds []frontier.Item
	for i := 0; i < sh.seeds*sh.hosts; i++ {
		seeds = append(seeds, frontier.Item{URL: fmt.Sprintf("http://h%d.example/seed/%d", i%sh.hosts, i), Priority: sh.level(i / sh.hosts)})
	}
	if _, err := f.Enqueue(ctx, seeds); err != nil {
		b.Fatal(err)
	}
	if sh.ip {
		var answers []perhost.Address
		for i := range sh.hosts {
			answers = append(answers, perhost.Address{Host: fmt.Sprintf("h%d.example", i), Addr: fmt.Sprintf("10.0.%d.%d", i/256, i%256), TTL: time.Hour})
		}
		if err := f.Hosts.SetAddresses(ctx, answers); err != nil {
			b.Fatal(err)
		}
	}
	x, err := f.Exchange(ctx, nil, nil, sh.batch)
	if err != nil {
		b.Fatal(err)
	}
	record := []byte(`{"url":"http://h1.example/some/page/of/the/site","status":200,"content_type":"text/html; charset=utf-8",` +
		`"bytes":5120,"title":"A page of the site","depth":3,"links":27,"new_links":0,"fetch_ms":51,"worker":"host-1234",` +
		`"fetched_at":"2026-11-30T03:13:45.123456Z"}`)
	var visit *recrawl.Visit
	if sh.visits {
		visit = &recrawl.Visit{ETag: `"abc123"`, Digest: "sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", Interval: 86400}
	}
	s.Client.ConfigResetStat(ctx)
	cpu := redistest.CPU(b, s.Client)
	b.ResetTimer()
	pages := 0
	for i := 0; i < b.N; i++ {
		done := make([]frontier.Finished, len(x.Popped))
		for j, l := range x.Popped {
			pages++
			host := "http://" + l.Host
			done[j] = frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: "ok", Fetched: true, Record: record, Visit: visit, Due: 24 * time.Hour,
				Children: []frontier.Item{
					{URL: fmt.Sprintf("%s/page/%d/%d", host, i, j), Depth: 3, Priority: sh.level(i + j)},   // new
					{URL: fmt.Sprintf("%s/page/%d/%d", host, i/2, j), Depth: 3, Priority: sh.level(i + j)}, // seen (half the time)
					{URL: host + "/seed/0", Depth: 1}, // seen
				}}}
		}
		if x, err = f.Exchange(ctx, done, nil, sh.batch); err != nil {
			b.Fatal(err)
		}
		if len(x.Popped) != sh.batch {
			b.Fatalf("exchange %d popped %d of %d", i, len(x.Popped), sh.batch)
		}
	}
	b.StopTimer()
	used := redistest.CPU(b, s.Client) - cpu
	script := float64(redistest.CommandStats(b, s.Client)["evalsha"].Usec)
	b.ReportMetric(float64(used.Microseconds())/float64(pages), "redis-µs/page")
	b.ReportMetric(script/float64(pages), "script-µs/page")
	b.ReportMetric(0, "ns/op")
	if m := s.Client.HGetAll(ctx, "prof").Val(); len(m) > 0 { // a Lua profile, when a change adds one
		for k, v := range m {
			var us float64
			fmt.Sscanf(v, "%f", &us)
			b.Logf("%s %.2f µs/page", k, us/float64(pages))
		}
	}
}

// BenchmarkQueuedURLMemory measures what a queued URL costs Redis: 1M URLs
// of about 60 characters over 1 000 hosts, queued as a crawl discovers
// them — pages of 25 new links each (as while a crawl's frontier grows),
// or of 1 (as near its end), the page's URL as every link's parent, 500
// links a batch — then `INFO memory` (used_memory) before and after, and
// MEMORY USAGE of the frontier's keys. The Bloom filter is sized for the
// million, as seed sizes it. Run with -benchtime 1x.
// A third case spreads the million over 100 000 hosts, 10 URLs each: what
// a host's own keys cost.
// The priority cases queue every URL at priority 5 (each an item's JSON
// in a list of its level), or every other page's links at 5 (a host's
// URLs in two lists): what a priority costs a queued URL.
func BenchmarkQueuedURLMemory(b *testing.B) {
	for _, c := range []struct{ hosts, perPage, priority, every int }{{1000, 25, 0, 1}, {1000, 1, 0, 1}, {100_000, 10, 0, 1},
		{1000, 25, 5, 1}, {1000, 25, 5, 2}, {100_000, 10, 5, 2}} {
		name := fmt.Sprintf("hosts=%d/new-links-a-page=%d", c.hosts, c.perPage)
		if c.priority != 0 {
			name += fmt.Sprintf("/priority=%d-every-%d-pages", c.priority, c.every)
		}
		b.Run(name, func(b *testing.B) { queuedURLMemory(b, c.hosts, c.perPage, c.priority, c.every) })
	}
}

func queuedURLMemory(b *testing.B, hosts, perPage, priority, every int) {
	const urls, batch = 1_000_000, 500
	for i := 0; i < b.N; i++ {
		s := redistest.Real(b)
		ctx := context.Background()
		s.Client.FlushAll(ctx)
		before := usedMemory(b, s)
		s.Client.HSet(ctx, keyspace.KeysFor("m").Config, "scope", "host")
		f, err := frontier.Create(ctx, s.Client, "m", frontier.Options{Shards: 1}, dedup.Params{Capacity: urls, FPRate: 0.001})
		if err != nil {
			b.Fatal(err)
		}
		items := make([]frontier.Item, 0, batch)
		for n := 0; n < urls; n++ {
			// ~60 characters: http://www.host-NNN.example.org/docs/section-NN/page-NNNNNNN.html
			// (host-NNNNN with 100 000 hosts), linked from a page of the same host.
			page := n / perPage
			host := page % hosts
			items = append(items, frontier.Item{URL: fmt.Sprintf("http://www.host-%03d.example.org/docs/section-%02d/page-%07d.html",
				host, n%97, n), Depth: 3, Parent: fmt.Sprintf("http://www.host-%03d.example.org/docs/section-%02d/page-%07d.html",
				host, page%97, page)})
			if page%every == 0 {
				items[len(items)-1].Priority = priority
			}
			if hosts > 1000 { // the same length: two more digits of host, two fewer of page
				items[len(items)-1].URL = fmt.Sprintf("http://www.host-%05d.example.org/docs/section-%02d/page-%05d.html", host, n%97, n%100000)
			}
			if len(items) == batch {
				if _, err := f.Enqueue(ctx, items); err != nil {
					b.Fatal(err)
				}
				items = items[:0]
			}
		}
		sz, err := f.Sizes(ctx)
		if err != nil || sz.Queued < urls*99/100 { // the Bloom filter's false positives are not queued
			b.Fatalf("%d queued of %d (%v)", sz.Queued, urls, err)
		}
		queued := float64(sz.Queued)
		after := usedMemory(b, s)
		k := keyspace.KeysFor("m")
		var inQueues int64
		iter := s.Client.Scan(ctx, 0, k.Queues+"*", 1000).Iterator()
		for iter.Next(ctx) {
			inQueues += s.Client.MemoryUsage(ctx, iter.Val(), 0).Val()
		}
		perKey := map[string]int64{k.Queues + "*": inQueues}
		for _, key := range []string{k.Ready, k.Stats, k.Config} {
			perKey[key] = s.Client.MemoryUsage(ctx, key, 0).Val()
		}
		st, _ := f.BloomStats(ctx)
		b.ReportMetric(float64(after-before)/queued, "B/queued-URL")
		b.ReportMetric(float64(inQueues)/queued, "B/URL-in-queues")
		b.ReportMetric(float64(st.Bits)/8/queued, "B/URL-in-Bloom")
		b.ReportMetric(0, "ns/op")
		b.Logf("used_memory %d -> %d; per key %v", before, after, perKey)
		s.Client.FlushAll(ctx)
	}
}

func usedMemory(b *testing.B, s *redistest.Server) int64 {
	info := s.Client.Info(context.Background(), "memory").Val()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			var n int64
			fmt.Sscan(v, &n)
			return n
		}
	}
	b.Fatal("INFO memory has no used_memory")
	return 0
}

// BenchmarkVisitMemory measures what a fetched URL's revisit state costs
// Redis (visit.go): 100 000 URLs of about 60 characters over 1 000 hosts,
// each popped and finished through the exchange with a visit as a crawl
// writes it (an ETag, a Last-Modified, a SHA-1 payload digest, the
// archived copy's date, an interval), then MEMORY USAGE of the due set
// that keeps them, a URL; and of the digest index, with a digest for each. Run with -benchtime 1x.
func BenchmarkVisitMemory(b *testing.B) {
	const urls, batch = 100_000, 500
	for i := 0; i < b.N; i++ {
		s := redistest.Real(b)
		ctx := context.Background()
		s.Client.FlushAll(ctx)
		s.Client.HSet(ctx, keyspace.KeysFor("m").Config, "scope", "host")
		f, err := frontier.Create(ctx, s.Client, "m", frontier.Options{Shards: 1, Lease: time.Minute}, dedup.Params{Capacity: urls, FPRate: 0.001})
		if err != nil {
			b.Fatal(err)
		}
		items := make([]frontier.Item, 0, batch)
		for n := 0; n < urls; n++ {
			items = append(items, frontier.Item{URL: fmt.Sprintf("http://www.host-%03d.example.org/docs/section-%02d/page-%07d.html", n%1000, n%97, n), Depth: 3})
			if len(items) == batch {
				if _, err := f.Enqueue(ctx, items); err != nil {
					b.Fatal(err)
				}
				items = items[:0]
			}
		}
		var done []frontier.Finished
		for {
			x, err := f.Exchange(ctx, done, nil, batch)
			if err != nil {
				b.Fatal(err)
			}
			if len(x.Popped) == 0 {
				break
			}
			done = done[:0]
			for j, l := range x.Popped {
				v := &recrawl.Visit{ETag: fmt.Sprintf(`"5f2b-61c8a7e3b%05d"`, j), LastModified: "Tue, 01 Dec 2026 21:58:57 GMT",
					Digest: fmt.Sprintf("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSC%05dY", j), RefDate: time.Now().UnixNano(), Interval: 86400, Status: 200}
				done = append(done, frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: "ok", Fetched: true, Visit: v, Due: 24 * time.Hour}})
			}
		}
		k := keyspace.KeysFor("m")
		kept := s.Client.ZCard(ctx, k.Due).Val()
		if kept < urls*99/100 {
			b.Fatalf("%d visits kept of %d URLs", kept, urls)
		}
		due := s.Client.MemoryUsage(ctx, k.Due, 0).Val()
		b.ReportMetric(float64(due)/float64(kept), "B/URL-state")
		// The crawl's digest index, an entry a payload archived whole.
		for n := 0; n < urls; n++ {
			u := fmt.Sprintf("http://www.host-%03d.example.org/docs/section-%02d/page-%07d.html", n%1000, n%97, n)
			if _, _, err := f.Digests.Claim(ctx, fmt.Sprintf("sha1:3I42H3S6NNFQ2MSVX7XZKY%010d", n), u, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(s.Client.MemoryUsage(ctx, "crawl:{m}:digests", 0).Val())/urls, "B/digest")
		b.ReportMetric(0, "ns/op")
		s.Client.FlushAll(ctx)
	}
}
