package crawl

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redis/go-redis/v9"
)

// openShards opens the crawl's frontier, one Frontier a shard, each with
// its Bloom filter (frontier.Shards) and what the settings say of pops
// (page budget or its share, per-host cap and spacing). create makes what a shard needs
// (seed): its filter, sized for its share of the expected URLs, and for a
// shard other than the first its marker, by which its scripts know the
// crawl exists; otherwise both must be there.
func openShards(ctx context.Context, c redis.UniversalClient, k Keys, s Settings, create bool) (*frontier.Shards, error) {
	fs := make([]*frontier.Frontier, s.Shards)
	params := s.bloom()
	params.Capacity = (params.Capacity + int64(s.Shards) - 1) / int64(s.Shards)
	shares := frontier.Shares(s.MaxPages, s.Shards)
	for i := range fs {
		var seen *dedup.Filter
		var err error
		if create {
			if i > 0 {
				if err := c.Set(ctx, k.Shard(i).Config, "1", 0).Err(); err != nil {
					return nil, fmt.Errorf("crawl: shard %d: %w", i, err)
				}
			}
			seen, err = dedup.Open(ctx, c, k.SeenOf(i), params)
		} else {
			seen, err = dedup.Attach(ctx, c, k.SeenOf(i))
		}
		if err != nil {
			return nil, fmt.Errorf("crawl %q: shard %d: %w", k.Name, i, err)
		}
		f := frontier.New(c, k.Shard(i), seen)
		f.ResultsCap = frontier.ResultsKept / int64(s.Shards) // the streams keep about a million records in all
		f.PageBudget, f.HostPageCap = s.MaxPages, s.MaxPagesPerHost
		if !math.IsInf(s.Rate, 1) {
			f.HostSpacing = time.Duration(float64(time.Second) / s.Rate)
		}
		if s.MaxPages > 0 && s.Shards > 1 {
			f.PageBudget = -1 // each shard pops within its share (frontier.Shards.Schedule)
			if create {
				if err := f.SetShare(ctx, shares[i]); err != nil {
					return nil, fmt.Errorf("crawl: shard %d: %w", i, err)
				}
			}
		}
		fs[i] = f
	}
	return frontier.NewShards(fs), nil
}
