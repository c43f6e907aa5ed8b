package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// The crawl's settings hash (the first shard's "config", whose existence
// is the crawl's: ErrGone) and the seeds' hosts (Scope): written by the
// seeding, read by every worker.

var storeConfig = script.New("frontier/control/store_config", `
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
	return f.C.SAdd(ctx, f.hostsKey(), hosts).Err()
}

// Hosts are the seeds' hosts, read in batches (SSCAN): a crawl seeded
// with a million hosts costs Redis many short calls, never one that holds
// it for a quarter of a second.
func (f Scope) Hosts(ctx context.Context) ([]string, error) {
	var hosts []string
	seen := map[string]bool{} // SSCAN may give a member twice
	var cursor uint64
	for {
		batch, next, err := f.C.SScan(ctx, f.hostsKey(), cursor, "", seedHostsBatch).Result()
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
	return f.C.SCard(ctx, f.hostsKey()).Result()
}

// Scope is the seeds' hosts, the crawl's scope (frontier.Frontier.Scope).
type Scope struct{ keyspace.Set }

// hostsKey is the set of the seeds' hosts.
func (f Scope) hostsKey() string { return keyspace.Tag(f.Name, 0) + "hosts" }
