package crawl

import (
	"context"
	"fmt"
	"net/url"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redis/go-redis/v9"
)

// SeedReport says what Seed did.
type SeedReport struct {
	Queued int // new URLs put on the frontier
	Known  int // URLs the crawl had already seen
}

// Seed adds canonical seed URLs to the crawl (creating it with s when it is
// new; see StoreSettings), widens the scope to their hosts, and reopens a
// finished crawl.
func Seed(ctx context.Context, c redis.UniversalClient, k Keys, s Settings, seeds []*url.URL) (SeedReport, error) {
	if err := CheckName(k.Name); err != nil {
		return SeedReport{}, err
	}
	if _, err := StoreSettings(ctx, c, k, s); err != nil {
		return SeedReport{}, err
	}
	seen, err := dedup.Open(ctx, c, k.Seen, s.bloom())
	if err != nil {
		return SeedReport{}, err
	}
	if len(seeds) == 0 {
		return SeedReport{}, nil
	}
	hosts := make([]any, 0, len(seeds))
	items := make([]frontier.Item, 0, len(seeds))
	for _, u := range seeds {
		hosts = append(hosts, u.Host)
		items = append(items, frontier.Item{URL: u.String()})
	}
	// Scope first: a worker must never see a seed whose host it would reject.
	if err := c.SAdd(ctx, k.Hosts, hosts...).Err(); err != nil {
		return SeedReport{}, fmt.Errorf("crawl: seed: %w", err)
	}
	queued, err := frontier.New(c, k.Frontier, seen).Enqueue(ctx, items)
	if err != nil {
		return SeedReport{}, err
	}
	var r SeedReport
	for _, q := range queued {
		if q {
			r.Queued++
		} else {
			r.Known++
		}
	}
	if r.Queued > 0 {
		if err := c.Del(ctx, k.Done).Err(); err != nil {
			return r, fmt.Errorf("crawl: seed: %w", err)
		}
	}
	return r, nil
}
