package frontier

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// openShards makes the n shards of crawl name, each with its Bloom filter
// and its marker, as seeding does.
func openShards(t *testing.T, c redis.UniversalClient, name string, n int) *Shards {
	t.Helper()
	ctx := context.Background()
	var fs []*Frontier
	for s := 0; s < n; s++ {
		k := KeysForShard(name, s)
		seen, err := dedup.Open(ctx, c, k.Queues+"seen", dedup.Params{Capacity: 10000, FPRate: 0.001})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.HSet(ctx, k.Config, "scope", "host").Err(); err != nil {
			t.Fatal(err)
		}
		f := New(c, k, seen)
		f.HostSpacing = 0
		fs = append(fs, f)
	}
	return NewShards(fs)
}

// A crawl over three shards, of a site whose pages link across hosts (and
// so across shards): every page is popped exactly once, every link's
// new-or-seen answer is right, records count the new links found in other
// shards, and the sweeps call the crawl over only once nothing is left —
// never while a page is still being worked on.
func TestShardsCrawlEveryPageOnce(t *testing.T) {
	run := func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		sh := openShards(t, c, "sh", 3)
		clock := time.Unix(1_800_000_000, 0)
		sh.now = func() time.Time { return clock }
		c.Set(ctx, "crawl:{sh}:leader:epoch", "1", 0)
		const hosts, pages = 7, 30
		url := func(h, p int) string { return fmt.Sprintf("http://h%d.example/p%d", h, p) }
		links := func(h, p int) []Item { // to the next page here and the same page two hosts on
			return []Item{{URL: url(h, (p+1)%pages), Depth: 1, Parent: url(h, p)}, {URL: url((h+2)%hosts, p), Depth: 1, Parent: url(h, p)}}
		}
		for h := 0; h < hosts; h++ {
			if _, err := sh.Of(fmt.Sprintf("h%d.example", h)).Enqueue(ctx, []Item{{URL: url(h, 0)}}); err != nil {
				t.Fatal(err)
			}
		}
		fetched := map[string]int{}
		var pending []Finished
		newLinks := 0
		for round := 0; round < 2000; round++ {
			// The pages of one shard a call, as the exchanger sends them.
			var batch, rest []Finished
			for _, f := range pending {
				if len(batch) == 0 || sh.Home(f.Lease) == sh.Home(batch[0].Lease) {
					batch = append(batch, f)
				} else {
					rest = append(rest, f)
				}
			}
			x, err := sh.Exchange(ctx, batch, nil, 5)
			if err != nil {
				t.Fatal(err)
			}
			pending = rest
			for d := range batch {
				if !x.Held[d] {
					t.Fatalf("lease of %s not held", batch[d].Lease.Item.URL)
				}
				for _, q := range x.Queued[d] {
					if q {
						newLinks++
					}
				}
			}
			for _, l := range x.Popped {
				fetched[l.Item.URL]++
				var h, p int
				fmt.Sscanf(l.Item.URL, "http://h%d.example/p%d", &h, &p)
				rec := []byte(`{"url":` + strconv.Quote(l.Item.URL) + `}`)
				pending = append(pending, Finished{Lease: l, Outcome: Outcome{Stat: "ok", Fetched: true, Record: rec, Children: links(h, p)}})
			}
			if len(x.Popped) == 0 && len(pending) == 0 {
				sw, err := sh.Schedule(ctx, "crawl:{sh}:leader:epoch", 1, 3, 100, 0)
				if err != nil {
					t.Fatal(err)
				}
				if sw.CrawlOver {
					break
				}
				clock = clock.Add(2 * time.Second) // past every shard's idle time
			} else if sw, err := sh.Schedule(ctx, "crawl:{sh}:leader:epoch", 1, 3, 100, 0); err != nil || sw.CrawlOver {
				t.Fatalf("sweep with %d pages in hand: over %v, %v", len(pending)+len(x.Popped), sw.CrawlOver, err)
			}
		}
		if len(fetched) != hosts*pages {
			t.Fatalf("%d pages fetched; want %d", len(fetched), hosts*pages)
		}
		for u, n := range fetched {
			if n != 1 {
				t.Errorf("%s popped %d times", u, n)
			}
		}
		if newLinks != hosts*pages-hosts { // every page but the seeds was new once
			t.Errorf("%d links answered new; want %d", newLinks, hosts*pages-hosts)
		}
		recorded, perShard := 0, []int64{}
		for _, f := range sh.All() {
			msgs := c.XRange(ctx, f.keys.Results, "-", "+").Val()
			perShard = append(perShard, int64(len(msgs)))
			for _, m := range msgs {
				n, _ := strconv.Atoi(fmt.Sprint(m.Values["new_links"]))
				recorded += n
			}
		}
		if recorded != newLinks {
			t.Errorf("records count %d new links; the exchanges said %d", recorded, newLinks)
		}
		for s, n := range perShard {
			if n == 0 {
				t.Errorf("shard %d recorded nothing: %v", s, perShard)
			}
		}
	}
	t.Run("miniredis", func(t *testing.T) { run(t, redistest.Mini(t).Client) })
	t.Run("redis-server", func(t *testing.T) { run(t, redistest.Real(t).Client) })
	t.Run("redis-cluster", func(t *testing.T) { run(t, redistest.RealCluster(t, 3).Client) })
}
