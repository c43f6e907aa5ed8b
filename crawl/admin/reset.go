package admin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/redisconn"
	"github.com/redis/go-redis/v9"
)

// ResetReport says what Reset did.
type ResetReport struct {
	Deleted int      // keys deleted
	Stopped []string // workers that were alive, and stopped and said so (deregistered; with force)
	// Silent are the workers that were alive and went silent instead of
	// saying they stopped: their registrations lapsed (hung, or cut off
	// from Redis). Such a one may still run; when it reaches Redis again,
	// every script refuses it, a new crawl of the same name too (its
	// instance id is another), and it stops.
	Silent []string
}

// Reset deletes every key of the crawl, found with SCAN (never KEYS, which
// blocks a busy server). While workers are alive it refuses
// (crawl.ErrWorkersAlive, naming them) unless force; then it stops them first:
//  1. it deletes the config, from which moment every script of the crawl
//     refuses to write (frontier.ErrGone) and every worker, at its next
//     heartbeat or exchange, stops all it does and deregisters;
//  2. it waits until no worker is alive: deregistered, or silent past its
//     lease (a hung or partitioned one);
//  3. it deletes the rest, including whatever a worker wrote before it
//     stopped (robots.txt cache, token buckets, a scheduler's lock).
//
// No key of the crawl reappears afterwards: no worker is left to write one.
func Reset(ctx context.Context, c redis.UniversalClient, name string, force bool) (ResetReport, error) {
	var rep ResetReport
	if err := crawl.CheckName(name); err != nil {
		return rep, err
	}
	shards := 1 // a crawl half reset already has no settings: its patterns still match its shards
	if set, err := settings.Load(ctx, c, name); err == nil {
		shards = set.Shards
	}
	fr, err := frontier.New(c, name, frontier.Options{Shards: shards})
	if err != nil {
		return rep, err
	}
	alive, err := fr.Registry.Workers(ctx)
	if err != nil {
		return rep, fmt.Errorf("crawl: reset: %w", err)
	}
	if len(alive) > 0 && !force {
		return rep, fmt.Errorf("%w on crawl %q: %s; stop them first, or reset with --force (they then stop with an error)",
			crawl.ErrWorkersAlive, name, strings.Join(alive, ", "))
	}
	if full, line := redisconn.RedisFull(ctx, c); full && !force {
		// A lapsed registration is no sign of a stopped worker while
		// Redis refuses the heartbeats that would renew it.
		lapsed, err := fr.Registry.Lapsed(ctx)
		if err != nil {
			return rep, fmt.Errorf("crawl: reset: %w", err)
		}
		if len(lapsed) > 0 {
			return rep, fmt.Errorf("%w on crawl %q, perhaps: %s; so %s may be running although their registrations lapsed; "+
				"give Redis memory first (CONFIG SET maxmemory), or reset with --force", crawl.ErrWorkersAlive, name, line, strings.Join(lapsed, ", "))
		}
	}
	if len(alive) > 0 {
		was := alive
		n, err := fr.Withdraw(ctx) // every shard's scripts refuse from now on
		if err != nil {
			return rep, fmt.Errorf("crawl: reset: %w", err)
		}
		rep.Deleted += n
		for len(alive) > 0 {
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return rep, ctx.Err()
			case <-t.C:
			}
			if alive, err = fr.Registry.Workers(ctx); err != nil {
				return rep, fmt.Errorf("crawl: reset: %w", err)
			}
		}
		// A worker that stopped deregistered; one still in the registry,
		// lapsed, only went silent.
		lapsed, err := fr.Registry.Lapsed(ctx)
		if err != nil {
			return rep, fmt.Errorf("crawl: reset: %w", err)
		}
		silent := map[string]bool{}
		for _, id := range lapsed {
			silent[id] = true
		}
		for _, id := range was {
			if silent[id] {
				rep.Silent = append(rep.Silent, id)
			} else {
				rep.Stopped = append(rep.Stopped, id)
			}
		}
	}
	n, err := keyspace.Delete(ctx, c, name)
	rep.Deleted += n
	if err != nil {
		return rep, fmt.Errorf("crawl: reset: %w", err)
	}
	return rep, nil
}
