package frontier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"pgregory.net/rapid"
)

// A host's queue stays under twice its page cap, whatever its pages
// offer, with a budget or without: from one link to 5,000 (a
// sitemap's 50,000 come as one page's links), over pages and exchanges;
// each link not queued is counted, and every link is queued, dropped or
// already seen. On both Redis kinds.
func TestTheQueueStaysNearItsCapsWhateverIsOffered(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		n := 0
		// Pages of up to 5,000 links; 1,000 on miniredis, whose Lua under
		// the race detector took 48 s for the full size (4 s on
		// redis-server), and whose pages still overrun any cap up to 500.
		most := 5_000
		if s.Mini != nil {
			most = 1_000
		}
		rapid.Check(t, func(t *rapid.T) {
			n++
			name := fmt.Sprintf("cap%d", n)
			hostCap := rapid.Int64Range(1, 1000).Draw(t, "host cap")
			budget := rapid.SampledFrom([]int64{0, 0, rapid.Int64Range(1, 5000).Draw(t, "budget if any")}).Draw(t, "budget")
			s.Client.HSet(ctx, keyspace.KeysFor(name).Config, "scope", "host")
			f, err := frontier.Create(ctx, s.Client, name, frontier.Options{Shards: 1, Lease: time.Minute,
				Policy: frontier.Policy{HostPageCap: hostCap, PageBudget: budget}}, dedup.Params{Capacity: 100_000, FPRate: 0.001})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.EnqueueAll(ctx, []frontier.Item{{URL: "http://big.example/"}}); err != nil {
				t.Fatal(err)
			}
			offered := 0
			for page := range rapid.IntRange(1, 2).Draw(t, "pages") {
				x, err := f.Exchange(ctx, nil, nil, 1)
				if err != nil || len(x.Popped) == 0 {
					t.Fatalf("pop: %v, %v", x.Popped, err)
				}
				k := rapid.IntRange(1, most).Draw(t, "links")
				links := make([]frontier.Item, k)
				for i := range links {
					links[i] = frontier.Item{URL: fmt.Sprintf("http://big.example/%d/%d", page, i), Depth: 1}
					if i%7 == 0 {
						links[i].URL = fmt.Sprintf("http://other%d.example/%d", i%50, page*most+i) // unique across pages: page*k+i met page 0's for some k
					}
				}
				offered += k
				if _, err := f.Exchange(ctx, []frontier.Finished{{Lease: x.Popped[0], Outcome: frontier.Outcome{Stat: "ok", Children: links}}}, nil, 0); err != nil {
					t.Fatalf("an exchange of %d links: %v", k, err)
				}
			}
			k := keyspace.KeysFor(name)
			big, _ := s.Client.HGet(ctx, k.Lengths, "big.example").Int64()
			st := s.Client.HGetAll(ctx, k.Stats).Val()
			var queued, enq, skipHost, skipBudget int64
			fmt.Sscan(st["queued"], &queued)
			fmt.Sscan(st["enqueued"], &enq)
			fmt.Sscan(st["skipped_links:max_pages_per_host"], &skipHost)
			fmt.Sscan(st["skipped_links:max_pages"], &skipBudget)
			if big > 2*hostCap {
				t.Fatalf("big.example holds %d queued under a cap of %d", big, hostCap)
			}
			if skipBudget != 0 {
				t.Fatalf("%d links dropped by the budget: a raised budget could not reopen the crawl with them", skipBudget)
			}
			if enq+skipHost != int64(offered)+1 { // the seed
				t.Fatalf("%d offered: %d queued, %d and %d dropped by the caps", offered, enq-1, skipHost, skipBudget)
			}
		})
	})
}
