package frontier

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// What the crawl keeps beside the queues: its settings, its seeds' hosts,
// its counters, its done flag. To frontier they are opaque fields and
// words; package crawl gives them their meaning.

var storeConfig = script.New("frontier/store_config", `
-- KEYS[1] the settings hash; ARGV: field, value, field, value, ...
-- Reply: the hash, as HGETALL; written only when it did not exist.
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])`)

// StoreConfig writes fields as crawl name's settings unless it has some,
// and returns what it has, in one atomic call: the settings of a crawl are
// written once, by its first seeding. Their hash is the first shard's
// "config", whose existence is the crawl's (ErrGone).
func StoreConfig(ctx context.Context, c redis.UniversalClient, name string, fields map[string]string) (map[string]string, error) {
	if err := keyspace.CheckName(name); err != nil {
		return nil, err
	}
	args := make([]any, 0, 2*len(fields))
	for f, v := range fields {
		args = append(args, f, v)
	}
	res, err := storeConfig.Run(ctx, c, []string{keyspace.KeysFor(name).Config}, args...).StringSlice()
	if err != nil {
		return nil, err
	}
	have := make(map[string]string, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		have[res[i]] = res[i+1]
	}
	return have, nil
}

// InstanceField is the config field of the crawl's instance id.
const InstanceField = "instance"

// NewInstance is a fresh instance id: 128 random bits, in hex.
func NewInstance() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Instance is the instance id crawl name's config holds now ("" when it
// has none, or there is no such crawl).
func Instance(ctx context.Context, c redis.UniversalClient, name string) (string, error) {
	v, err := c.HGet(ctx, keyspace.KeysFor(name).Config, InstanceField).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// ReadConfig reads crawl name's settings: empty when there is no such
// crawl.
func ReadConfig(ctx context.Context, c redis.UniversalClient, name string) (map[string]string, error) {
	if err := keyspace.CheckName(name); err != nil {
		return nil, err
	}
	return c.HGetAll(ctx, keyspace.KeysFor(name).Config).Result()
}

// Add records hosts as the seeds' (the crawl's scope).
func (f Scope) Add(ctx context.Context, hosts []string) error {
	if len(hosts) == 0 {
		return nil
	}
	return f.c.SAdd(ctx, f.hostsKey(), hosts).Err()
}

// Hosts are the seeds' hosts, read in batches (SSCAN): a crawl seeded
// with a million hosts costs Redis many short calls, never one that holds
// it for a quarter of a second.
func (f Scope) Hosts(ctx context.Context) ([]string, error) {
	var hosts []string
	seen := map[string]bool{} // SSCAN may give a member twice
	var cursor uint64
	for {
		batch, next, err := f.c.SScan(ctx, f.hostsKey(), cursor, "", seedHostsBatch).Result()
		if err != nil {
			return nil, err
		}
		for _, h := range batch {
			if !seen[h] {
				seen[h] = true
				hosts = append(hosts, h)
			}
		}
		if cursor = next; cursor == 0 {
			return hosts, nil
		}
	}
}

// seedHostsBatch is how many seed hosts SeedHosts asks for a call.
const seedHostsBatch = 10_000

// Count is how many seed hosts the crawl has: one O(1) call
// (SCARD), whatever their number. Seeds only add hosts (a reset deletes
// the set whole), so a count unchanged is a scope unchanged.
func (f Scope) Count(ctx context.Context) (int64, error) {
	return f.c.SCard(ctx, f.hostsKey()).Result()
}

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
	return unlink(ctx, f.c, gone)
}

// Delete deletes every key of crawl name, found with SCAN (never KEYS,
// which blocks a busy server), and returns how many. It does not stop
// workers: Withdraw first, and wait for them to go.
func Delete(ctx context.Context, c redis.UniversalClient, name string) (int, error) {
	if err := keyspace.CheckName(name); err != nil {
		return 0, err
	}
	deleted := 0
	for _, pattern := range keyspace.Patterns(name) {
		err := scanKeys(ctx, c, pattern, func(keys []string) error {
			n, err := unlink(ctx, c, keys)
			deleted += n
			return err
		})
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
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
