package keyspace

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// scanKeys calls fn with every key matching pattern, in batches. A
// Redis Cluster is scanned master by master (SCAN sees one node's keys),
// one master at a time, so fn need not be safe for concurrent use.
func scanKeys(ctx context.Context, c redis.UniversalClient, pattern string, fn func([]string) error) error {
	scan := func(ctx context.Context, node redis.UniversalClient) error {
		iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
		var batch []string
		for iter.Next(ctx) {
			if batch = append(batch, iter.Val()); len(batch) == 500 {
				if err := fn(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		if len(batch) > 0 {
			return fn(batch)
		}
		return nil
	}
	cluster, ok := c.(*redis.ClusterClient)
	if !ok {
		return scan(ctx, c)
	}
	var mu sync.Mutex // ForEachMaster runs its calls at once
	return cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		return scan(ctx, node)
	})
}

// Unlink deletes keys, one UNLINK each in one pipeline: on a Cluster the
// keys of a batch live in many slots, which one multi-key UNLINK refuses.
func Unlink(ctx context.Context, c redis.UniversalClient, keys []string) (int, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Unlink(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	n := 0
	for _, cmd := range cmds {
		n += int(cmd.Val())
	}
	return n, nil
}

// Crawls are the names of the crawls c holds (each has its settings in
// its first shard's config hash), sorted; a SCAN of every master.
func Crawls(ctx context.Context, c redis.UniversalClient) ([]string, error) {
	seen := map[string]bool{}
	err := scanKeys(ctx, c, "crawl:{*}:config", func(keys []string) error {
		for _, k := range keys {
			name := strings.TrimSuffix(strings.TrimPrefix(k, "crawl:{"), "}:config")
			if name != "" && !strings.ContainsAny(name, "/{}:") {
				seen[name] = true
			}
		}
		return nil
	})
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, err
}

// Delete deletes every key of crawl name, found with SCAN (never KEYS,
// which blocks a busy server), and returns how many. It does not stop
// workers: Withdraw first, and wait for them to go.
func Delete(ctx context.Context, c redis.UniversalClient, name string) (int, error) {
	if err := CheckName(name); err != nil {
		return 0, err
	}
	deleted := 0
	for _, pattern := range Patterns(name) {
		err := scanKeys(ctx, c, pattern, func(keys []string) error {
			n, err := Unlink(ctx, c, keys)
			deleted += n
			return err
		})
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
