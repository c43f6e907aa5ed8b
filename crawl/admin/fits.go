package admin

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// fitsRedis refuses settings whose Bloom filter, allocated whole when the
// crawl is made, would not fit in its Redis: what the first shard's master
// may still take (its maxmemory, or else the machine's memory as INFO
// says it, less what it uses), with half of that left for the queues and
// the records. A Redis that says neither (miniredis) is not checked.
func fitsRedis(ctx context.Context, c redis.UniversalClient, name string, s settings.Settings) error {
	need := s.Bloom().FirstLayerBytes()
	node := redis.Cmdable(c)
	if cc, ok := c.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, keyspace.KeysFor(name).Config)
		if err != nil {
			return nil // the seed's own calls will say what is wrong
		}
		node = m
	}
	info, err := node.Info(ctx, "memory").Result()
	if err != nil {
		return nil
	}
	field := func(k string) int64 {
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), k+":"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return 0
	}
	used, limit, where := field("used_memory"), field("maxmemory"), "its maxmemory"
	if limit == 0 {
		limit, where = field("total_system_memory"), "the machine's memory"
	}
	if limit == 0 || used == 0 {
		return nil
	}
	if free := limit - used; need > free/2 {
		return fmt.Errorf("%w: --expected-urls %d at --fp-rate %v needs a Bloom filter of %s, allocated now, and this Redis has %s to spare "+
			"(%s, %s, less %s used; half is kept for the queues): give fewer expected URLs (the filter grows as the crawl does), "+
			"or a Redis with more memory", crawl.ErrSettings, s.ExpectedURLs, s.FPRate, ByteSize(need), ByteSize(max(free, 0)), where, ByteSize(limit), ByteSize(used))
	}
	return nil
}

// ByteSize is n bytes for a person ("1.9 MiB").
func ByteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
