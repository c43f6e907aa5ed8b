package perhost

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// Queue is one host's queue, as Controls.Queues reads it.
type Queue struct {
	Host   string `json:"host"`
	Queued int64  `json:"queued"`
	// DueIn is how long until the host's next URL may be popped: its
	// spacing, or the wait a requeue (robots.txt back-off, busy host) set;
	// 0 when it is due now.
	DueIn time.Duration `json:"due_in_ns"`
	// Interval is the least time between its requests now: the crawl's
	// rate's, or the host's own Crawl-delay, or its adaptive interval,
	// whichever is longest (0: no limit); Why says which ("rate",
	// "crawl-delay", "adaptive").
	Interval time.Duration `json:"interval_ns"`
	Why      string        `json:"interval_why,omitempty"`
	// Bucket is the host's token bucket now.
	Bucket Bucket `json:"bucket"`
}

// ScanLimit bounds the hosts Controls.Queues examines: a crawl of millions
// of hosts gets a sample (the hosts due soonest), not a stall of Redis.
const ScanLimit = 10000

// longest returns the n hosts with the most URLs queued in this shard,
// longest first (Queued only), and how many hosts have URLs queued
// (exact). With more than ScanLimit hosts, only those due soonest are
// looked at for the longest.
func (f Controls) longest(ctx context.Context, k keyspace.Keys, n int) ([]Queue, int64, error) {
	total, err := f.C.HLen(ctx, k.Lengths).Result()
	if err != nil {
		return nil, 0, fmt.Errorf("frontier: host queues: %w", err)
	}
	counts := map[string]string{}
	if total <= ScanLimit {
		// All of them: one pass over the hash. (HMGET of every field of a
		// small hash, kept as a listpack, is quadratic: ~1 ms at 250.)
		if counts, err = f.C.HGetAll(ctx, k.Lengths).Result(); err != nil {
			return nil, 0, fmt.Errorf("frontier: host queues: %w", err)
		}
	} else {
		names, err := f.C.ZRange(ctx, k.Ready, 0, ScanLimit-1).Result()
		if err != nil {
			return nil, 0, fmt.Errorf("frontier: host queues: %w", err)
		}
		if len(names) > 0 {
			vals, err := f.C.HMGet(ctx, k.Lengths, names...).Result()
			if err != nil {
				return nil, 0, fmt.Errorf("frontier: host queues: %w", err)
			}
			for i, v := range vals {
				counts[names[i]] = fmt.Sprint(v) // nil: none
			}
		}
	}
	out := []Queue{}
	for host, v := range counts {
		if q, _ := strconv.ParseInt(v, 10, 64); q > 0 {
			out = append(out, Queue{Host: host, Queued: q})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Queued > out[j].Queued || out[i].Queued == out[j].Queued && out[i].Host < out[j].Host
	})
	return out[:min(n, len(out))], total, nil
}

// Now reads hosts' queues as they stand, in one round trip: URLs
// queued, when each is due, its interval and its token bucket. A host
// with nothing queued has Queued 0 and DueIn 0.
func (f Controls) Now(ctx context.Context, hosts []string) ([]Queue, error) {
	pipe := f.C.Pipeline()
	now := pipe.Time(ctx)
	type reads struct {
		queued *redis.StringCmd
		due    *redis.FloatCmd
		refill *redis.FloatCmd
		bucket *redis.SliceCmd
		rule   *redis.StringCmd
	}
	rs := make([]reads, len(hosts))
	for i, h := range hosts {
		_, k := f.For(h)
		rs[i] = reads{pipe.HGet(ctx, k.Lengths, h), pipe.ZScore(ctx, k.Ready, h), pipe.ZScore(ctx, k.Refill, h), pipe.HMGet(ctx, k.Buckets+h, "delay", "adapt"),
			pipe.HGet(ctx, k.HostRules, h)}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("frontier: host queues: %w", err)
	}
	nowUs := now.Val().UnixMicro()
	out := make([]Queue, len(hosts))
	for i, h := range hosts {
		q, _ := rs[i].queued.Int64() // absent: none
		hq := Queue{Host: h, Queued: q}
		v := rs[i].bucket.Val()
		p := f.Pace()
		base, baseBurst, baseWhy := p.HostRate, max(p.HostBurst, 1), "rate"
		if r, b, ok := parseHostRule(rs[i].rule.Val()); ok { // its own rate (Controls.SetRule)
			base, baseBurst, baseWhy = r, b, "its own rate"
		}
		if base > 0 {
			hq.Interval, hq.Why = time.Duration(float64(time.Second)/base), baseWhy
		}
		for j, why := range []string{"crawl-delay", "adaptive"} {
			ms, _ := strconv.ParseInt(fmt.Sprint(v[j]), 10, 64) // nil: none
			if d := time.Duration(ms) * time.Millisecond; d > hq.Interval {
				hq.Interval, hq.Why = d, why
			}
		}
		rate, burst := base, baseBurst
		if hq.Why != baseWhy && hq.Interval > 0 { // its own delay is slower: a token per interval
			rate, burst = float64(time.Second)/float64(hq.Interval), 1
		}
		tat, err := rs[i].due.Result() // its bucket's tat: in ready, else in refill, else full
		if err != nil {
			if tat, err = rs[i].refill.Result(); err != nil {
				tat = float64(nowUs) / 1000
			}
		}
		hq.Bucket, hq.DueIn = bucketAt(tat, nowUs, rate, burst)
		out[i] = hq
	}
	return out, nil
}

// Queues returns the n hosts with the most URLs queued, longest
// first, as they stand (Controls.Now), and how many hosts have URLs queued
// (exact). Past ScanLimit hosts in a shard, only those due soonest are
// looked at for the longest.
func (f Controls) Queues(ctx context.Context, n int) ([]Queue, int64, error) {
	names, each, err := f.QueueNames(ctx, n)
	if err != nil {
		return nil, 0, err
	}
	var hosts int64
	for _, h := range each {
		hosts += h
	}
	now, err := f.Now(ctx, names)
	return now, hosts, err
}

// QueueNames returns the n hosts with the most URLs queued, longest
// first, and each shard's count of hosts with URLs queued.
func (f Controls) QueueNames(ctx context.Context, n int) ([]string, []int64, error) {
	var all []Queue
	each := make([]int64, len(f.Keys))
	for i, k := range f.Keys {
		top, h, err := f.longest(ctx, k, n)
		if err != nil {
			return nil, nil, f.In(i, err)
		}
		all, each[i] = append(all, top...), h
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Queued > all[j].Queued })
	names := make([]string, min(n, len(all)))
	for i := range names {
		names[i] = all[i].Host
	}
	return names, each, nil
}

// Room is how many more URLs host may have queued under a page cap of
// hostCap a host: what the exchange keeps of its new links (twice the
// cap, less its pages and its queue; exchange_finish.lua's ex_room), read
// in one call, for a caller that would otherwise send many it drops (a
// sitemap's tens of thousands, each marked seen on the way).
func (f Controls) Room(ctx context.Context, host string, hostCap int64) (int64, error) {
	_, k := f.For(host)
	pipe := f.C.Pipeline()
	pages := pipe.HGet(ctx, k.HostPages, host)
	queued := pipe.HGet(ctx, k.Lengths, host)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return 0, fmt.Errorf("frontier: host room: %w", err)
	}
	p, _ := pages.Int64()
	q, _ := queued.Int64()
	return max(0, 2*hostCap-p-q), nil
}
