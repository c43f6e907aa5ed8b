package frontier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// Home is the shard of a lease: where it must end.
func (f *store) Home(l *Lease) int { return keyspace.ShardOf(l.Host, len(f.fs)) }

// Wakes are the shards' wake channels.
func (f *Frontier) Wakes() []string {
	out := make([]string, len(f.fs))
	for i, sh := range f.fs {
		out[i] = sh.keys.Wake()
	}
	return out
}

// idleFor is how long a shard that popped nothing is left alone: until
// its next host is due, or this long when nothing is queued there. A
// worker woken by the shard's wake channel asks at once anyway (URLs
// queued there again say so), so this is only the fallback should a
// message be lost: a shard with no hosts is not asked, a call of its own
// in every pipeline, every second.
const idleFor = 5 * time.Second

// Woken forgets that the shard of wake channel ch had nothing: a message
// there says it has URLs again.
func (f *Frontier) Woken(ch string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, sh := range f.fs {
		if sh.keys.Wake() == ch {
			f.cross.woken(i)
		}
	}
}

// Sizes adds up the shards' counts, read in one pipeline (on a Cluster,
// one round trip a master).
func (f *Frontier) Sizes(ctx context.Context) (Sizes, error) {
	each, err := f.ShardSizes(ctx)
	var total Sizes
	for _, sz := range each {
		total.Queued += sz.Queued
		total.InFlight += sz.InFlight
		total.Deferred += sz.Deferred
		total.Failed += sz.Failed
		total.AtCap += sz.AtCap
	}
	return total, err
}

// ShardSizes is each shard's counts, in one pipeline.
func (f *Frontier) ShardSizes(ctx context.Context) ([]Sizes, error) {
	pipe := f.fs[0].c.Pipeline()
	reads := make([]func() Sizes, len(f.fs))
	for i, sh := range f.fs {
		reads[i] = sh.sizes(ctx, pipe)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("frontier: sizes: %w", err)
	}
	out := make([]Sizes, len(reads))
	for i, read := range reads {
		out[i] = read()
	}
	return out, nil
}

// Enqueue is Frontier.Enqueue over the shards: each item to its host's
// shard, one call a shard; the answers in the items' order.
func (f *Frontier) Enqueue(ctx context.Context, items []Item) ([]bool, error) {
	return f.enqueue(ctx, items, (*shard).Enqueue)
}

// EnqueueAll is Frontier.EnqueueAll over the shards.
func (f *Frontier) EnqueueAll(ctx context.Context, items []Item) ([]bool, error) {
	return f.enqueue(ctx, items, (*shard).EnqueueAll)
}

func (f *Frontier) enqueue(ctx context.Context, items []Item, fn func(*shard, context.Context, []Item) ([]bool, error)) ([]bool, error) {
	if err := f.opened(); err != nil {
		return nil, err
	}
	by := make([][]Item, len(f.fs))
	at := make([][]int, len(f.fs))
	for i, it := range items {
		host, err := hostOf(it.URL)
		if err != nil {
			return nil, err
		}
		sh := keyspace.ShardOf(host, len(f.fs))
		by[sh], at[sh] = append(by[sh], it), append(at[sh], i)
	}
	out := make([]bool, len(items))
	for sh, part := range by {
		if len(part) == 0 {
			continue
		}
		fresh, err := fn(f.fs[sh], ctx, part)
		if err != nil {
			return nil, err
		}
		for j, i := range at[sh] {
			out[i] = fresh[j]
		}
	}
	return out, nil
}

// SetDelay is shard.SetHostDelay in host's shard.
func (f Hosts) SetDelay(ctx context.Context, host string, delay time.Duration, back *Lease) (bool, error) {
	return f.store.fs[keyspace.ShardOf(host, len(f.store.fs))].SetHostDelay(ctx, host, delay, back)
}
