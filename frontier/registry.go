package frontier

import (
	"context"
	"fmt"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/registry"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// Registry is the crawl's workers (package registry: the first shard's "workers":
// worker -> when its registration lapses) and what keeps a worker's
// leases held: Frontier.Registry. Register claims an id, Heartbeat keeps
// it alive and renews its leases in every shard, Deregister ends it.
type Registry struct {
	registry.Roll
	store *store
}

// queueHeartbeat adds the heartbeat to pipe (Registry.Heartbeat sends
// every shard's in one pipeline), and returns how to read it.
func (f *shard) queueHeartbeat(ctx context.Context, pipe redis.Pipeliner, worker string, pages int64, leases []*Lease) func() (int, error) {
	args := []any{worker, f.o.Lease.Milliseconds(), fmt.Sprintf("%d %d", pages, len(leases)), f.o.Instance}
	for _, l := range leases {
		args = append(args, l.Member())
	}
	keys := []string{f.keys.Leases, f.keys.Workers, f.keys.Config, f.keys.WorkerInfo}
	sent := f.o.now()
	call := script.Queue(ctx, pipe, renewScript, keys, args...)
	return func() (int, error) {
		res, err := call.Result(ctx, f.c)
		if keyspace.IsGone(err) {
			return 0, ErrGone
		}
		if err != nil {
			return 0, fmt.Errorf("frontier: heartbeat: %w", err)
		}
		held, _ := res.([]any)
		if len(held) != len(leases) {
			return 0, fmt.Errorf("frontier: heartbeat: unexpected reply %v", res)
		}
		n := 0
		for i, l := range leases {
			if h, _ := held[i].(int64); h == 1 {
				l.granted(sent, f.o.Lease)
				n++
			} else {
				l.lost.Store(true) // reclaimed: another worker may have it now
			}
		}
		return n, nil
	}
}

// Heartbeat records that worker is alive (in the first shard, where the
// crawl's registry is) and extends its leases, each in its own shard: one
// call a shard with leases, in one pipeline.
func (f Registry) Heartbeat(ctx context.Context, worker string, pages int64, leases []*Lease) (int, error) {
	by := make([][]*Lease, len(f.store.fs))
	for _, l := range leases {
		by[f.store.Home(l)] = append(by[f.store.Home(l)], l)
	}
	pipe := f.store.c.Pipeline()
	reads := make([]func() (int, error), len(f.store.fs))
	for sh, part := range f.store.fs {
		switch {
		case sh == 0:
			reads[sh] = part.queueHeartbeat(ctx, pipe, worker, pages, by[0])
		case len(by[sh]) > 0:
			reads[sh] = part.queueHeartbeat(ctx, pipe, "", 0, by[sh])
		}
	}
	pipe.Exec(ctx) // each call's error is read below
	held := 0
	for sh, read := range reads {
		if read == nil {
			continue
		}
		n, err := read()
		if err != nil {
			return held, f.store.in(sh, err)
		}
		held += n
	}
	return held, nil
}
