package redisconn

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrEvicting: Redis may evict keys (maxmemory set, a policy other
// than noeviction); crawl.ErrEvictingRedis is this error.
var ErrEvicting = errors.New("crawl: Redis may evict the crawl's keys")

// A Redis that may evict keys loses a crawl silently: its settings (the
// workers then see the crawl as gone), its queues, its results, the
// scheduler's lock (volatile-* policies evict keys with a TTL first). So
// seed and work refuse a Redis whose memory limit is set with an evicting
// policy, unless told otherwise, and a worker watches evicted_keys while
// it runs.

// RedisMemory is what INFO says of one Redis server's memory policy.
type RedisMemory struct {
	Addr      string // the server ("" for a single client's only one)
	Known     bool   // INFO reported the fields (the embedded Redis does not)
	MaxMemory int64  // bytes; 0: no limit, so nothing is evicted whatever the policy
	Policy    string // maxmemory-policy
	Evicted   int64  // evicted_keys since the server started
	Used      int64  // used_memory, bytes
}

// Evicts reports whether the server may evict keys.
func (m RedisMemory) Evicts() bool { return m.Known && m.MaxMemory > 0 && m.Policy != "noeviction" }

// Full reports whether the server is over its memory limit: under
// noeviction it then refuses every command that may add data (OOM),
// heartbeats included.
func (m RedisMemory) Full() bool { return m.Known && m.MaxMemory > 0 && m.Used > m.MaxMemory }

// IsOOM reports whether err is Redis refusing a write for want of memory
// ("OOM command not allowed when used memory > 'maxmemory'"): a state that
// passes when memory frees, not a reason to give up.
func IsOOM(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "OOM ")
}

// RedisFull reports whether Redis (any master of a cluster) is over its
// memory limit, with a line that says so; false where INFO does not tell.
func RedisFull(ctx context.Context, c redis.UniversalClient) (bool, string) {
	all, err := ReadRedisMemory(ctx, c)
	if err != nil {
		return false, ""
	}
	for _, m := range all {
		if m.Full() {
			where := "Redis"
			if m.Addr != "" {
				where = "Redis at " + m.Addr
			}
			return true, fmt.Sprintf("%s is out of memory (used_memory %d > maxmemory %d, policy %s) and refuses writes, heartbeats included",
				where, m.Used, m.MaxMemory, m.Policy)
		}
	}
	return false, ""
}

// ReadRedisMemory reads INFO of the server, or of every master of a
// cluster. INFO works where CONFIG is disabled (as on managed services).
func ReadRedisMemory(ctx context.Context, c redis.UniversalClient) ([]RedisMemory, error) {
	cluster, ok := c.(*redis.ClusterClient)
	if !ok {
		m, err := readMemory(ctx, c)
		return []RedisMemory{m}, err
	}
	var mu sync.Mutex
	var all []RedisMemory
	err := cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		m, err := readMemory(ctx, node)
		m.Addr = node.Options().Addr
		mu.Lock()
		all = append(all, m)
		mu.Unlock()
		return err
	})
	return all, err
}

func readMemory(ctx context.Context, c redis.Cmdable) (RedisMemory, error) {
	info, err := c.Info(ctx).Result()
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return RedisMemory{}, nil // a server that refuses INFO: unknown, not a failure
	}
	if err != nil {
		return RedisMemory{}, fmt.Errorf("crawl: reading Redis's INFO: %w", err)
	}
	m := RedisMemory{}
	fields := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "maxmemory":
			m.MaxMemory, _ = strconv.ParseInt(v, 10, 64)
			fields++
		case "maxmemory_policy":
			m.Policy = v
			fields++
		case "evicted_keys":
			m.Evicted, _ = strconv.ParseInt(v, 10, 64)
		case "used_memory":
			m.Used, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	m.Known = fields == 2
	return m, nil
}

// CheckEviction refuses, with ErrEvicting and what to set, a Redis
// (any master of a cluster) that may evict keys.
func CheckEviction(ctx context.Context, c redis.UniversalClient) error {
	all, err := ReadRedisMemory(ctx, c)
	if err != nil {
		return err
	}
	for _, m := range all {
		if !m.Evicts() {
			continue
		}
		where := "Redis"
		if m.Addr != "" {
			where = "Redis at " + m.Addr
		}
		return fmt.Errorf("%w: %s has maxmemory %d bytes with maxmemory-policy %s; set maxmemory-policy noeviction "+
			"(CONFIG SET maxmemory-policy noeviction, or your provider's setting), so that a full Redis refuses "+
			"writes instead of dropping keys; or give --allow-eviction to crawl anyway", ErrEvicting, where, m.MaxMemory, m.Policy)
	}
	return nil
}

// EvictedKeys adds up evicted_keys (INFO stats) over the server or a
// cluster's masters; -1 when the server does not say (the embedded Redis).
func EvictedKeys(ctx context.Context, c redis.UniversalClient) (int64, error) {
	read := func(ctx context.Context, c redis.Cmdable) (int64, error) {
		info, err := c.Info(ctx, "stats").Result()
		var rerr redis.Error
		if errors.As(err, &rerr) {
			return -1, nil // INFO refused (an ACL without it): unknown
		}
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "evicted_keys:"); ok {
				return strconv.ParseInt(v, 10, 64)
			}
		}
		return -1, nil
	}
	cluster, ok := c.(*redis.ClusterClient)
	if !ok {
		return read(ctx, c)
	}
	var mu sync.Mutex
	var total int64
	err := cluster.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		n, err := read(ctx, node)
		mu.Lock()
		defer mu.Unlock()
		if n < 0 || total < 0 {
			total = -1
		} else {
			total += n
		}
		return err
	})
	return total, err
}
