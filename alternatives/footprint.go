package alternatives

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"
)

// Fill asks each of hosts hosts (h0, h1, …) each times through l, eight
// clients at once.
func Fill(ctx context.Context, l Limiter, hosts, each int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for h := range hosts {
		g.Go(func() error {
			for range each {
				if _, _, err := l.Take(ctx, fmt.Sprint("h", h)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// BytesAKey is the mean of MEMORY USAGE over the keys matching pattern
// (the key, its value and Redis's overhead for both), and how many
// there were.
func BytesAKey(ctx context.Context, c *redis.Client, pattern string) (float64, int, error) {
	var keys []string
	iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil || len(keys) == 0 {
		return 0, 0, err
	}
	pipe := c.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.MemoryUsage(ctx, k, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, 0, err
	}
	var sum int64
	for _, cmd := range cmds {
		sum += cmd.Val()
	}
	return float64(sum) / float64(len(keys)), len(keys), nil
}
