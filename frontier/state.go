package frontier

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// What the crawl keeps beside the queues: its counters, its done flag (its
// settings and its seeds' hosts are package control's). To frontier they
// are opaque fields and words; package crawl gives them their meaning.

// Reopen clears the done flags of a crawl of several shards before seeds
// are queued into it: each shard's enqueue clears its own in the script
// that queues, but the crawl's end is read from the first shard's flag,
// and the sweep ends a crawl only while the first shard's is clear. Done
// before the queueing, a failure between the two leaves a crawl open with
// nothing new in it, which the next sweep ends again; never a crawl said
// over with URLs queued. With one shard, the enqueue script alone does it,
// and Reopen does nothing.
func (f *Frontier) Reopen(ctx context.Context) error {
	if len(f.fs) == 1 {
		return nil
	}
	pipe := f.c.Pipeline()
	for _, sh := range f.fs {
		pipe.Del(ctx, sh.keys.DoneFlag)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Done reports whether the crawl is over: the first shard's done flag,
// which a sweep sets after every shard wrote its last record (Schedule).
func (f *Frontier) Done(ctx context.Context) (bool, error) {
	n, err := f.c.Exists(ctx, f.fs[0].keys.DoneFlag).Result()
	return n == 1, err
}

// notCounters are the stats fields that count nothing: the queues'
// length (Sizes), a shard's share of the page budget, how far a budgeted
// crawl's end has looked for URLs tried before (schedule.lua), and when a
// recrawl was asked for (recrawl.lua).
var notCounters = map[string]bool{"queued": true, "allow": true, "end_scan": true, "recrawl_at": true}

// Stats reads the crawl's counters, added up over its shards, in one
// pipeline (on a Cluster, one round trip a master): the scripts' own
// (enqueued, offered, pages, records, failed, dropped_*) and those an
// exchange's outcomes name (Outcome.Stat, Outcome.Counters).
func (f *Frontier) Stats(ctx context.Context) (map[string]int64, error) {
	each, err := f.ShardStats(ctx)
	if err != nil {
		return nil, err
	}
	n := map[string]int64{}
	for _, m := range each {
		for field, x := range m {
			n[field] += x
		}
	}
	return n, nil
}

// ShardStats is each shard's counters, in one pipeline.
func (f *Frontier) ShardStats(ctx context.Context) ([]map[string]int64, error) {
	pipe := f.c.Pipeline()
	stats := make([]*redis.MapStringStringCmd, len(f.fs))
	for i, sh := range f.fs {
		stats[i] = pipe.HGetAll(ctx, sh.keys.Stats)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("frontier: counters: %w", err)
	}
	out := make([]map[string]int64, len(stats))
	for i, cmd := range stats {
		n := map[string]int64{}
		for field, v := range cmd.Val() {
			if notCounters[field] {
				continue
			}
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("frontier: counter %s is %q, not a number", field, v)
			}
			n[field] += x
		}
		out[i] = n
	}
	return out, nil
}

// BloomStats adds up the shards' Bloom filters: their sizes and counts,
// and the worst estimated false-positive rate among them.
func (f *Frontier) BloomStats(ctx context.Context) (dedup.Stats, error) {
	if err := f.opened(); err != nil {
		return dedup.Stats{}, err
	}
	var total dedup.Stats
	for i, sh := range f.fs {
		st, err := sh.seen.Stats(ctx)
		if err != nil {
			return total, f.in(i, err)
		}
		if i == 0 {
			total = st
			continue
		}
		total.Capacity += st.Capacity
		total.Layers = append(total.Layers, st.Layers...)
		total.Count += st.Count
		total.Bits += st.Bits
		total.BitsSet += st.BitsSet
		total.EstimatedFPRate = max(total.EstimatedFPRate, st.EstimatedFPRate)
	}
	return total, nil
}

// Withdraw deletes the crawl's settings and every shard's marker: from
// then on every script of the crawl refuses to write (ErrGone), and every
// worker stops at its next heartbeat or exchange. It returns how many keys
// it deleted.
func (f *Frontier) Withdraw(ctx context.Context) (int, error) {
	gone := make([]string, len(f.fs))
	for i, sh := range f.fs {
		gone[i] = sh.keys.Config
	}
	return keyspace.Unlink(ctx, f.c, gone)
}

// AddCounts adds n to the crawl's counters (in the first shard's stats),
// in one round trip: counts a worker kept itself, such as links it did
// not follow.
func (f *Frontier) AddCounts(ctx context.Context, n map[string]int64) error {
	pipe := f.c.Pipeline()
	for field, count := range n {
		pipe.HIncrBy(ctx, f.fs[0].keys.Stats, field, count)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Exists reports whether the crawl exists: its settings do.
func (f *Frontier) Exists(ctx context.Context) (bool, error) {
	n, err := f.c.Exists(ctx, f.fs[0].keys.Config).Result()
	return n == 1, err
}
