package frontier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// Registry is the crawl's workers (the first shard's hash "workers":
// worker -> when its registration lapses) and what keeps a worker's
// leases held: Frontier.Registry. Register claims an id, Heartbeat keeps
// it alive and renews its leases in every shard, Deregister ends it.
type Registry struct{ *store }

// Register adds worker to the crawl's registry, alive for one lease
// length (Heartbeat keeps it so). If a live worker holds the id, it
// returns ErrIDInUse and how long until that registration lapses, should
// its holder not heartbeat again; ErrGone when the crawl is gone.
func (f *shard) Register(ctx context.Context, worker string) (time.Duration, error) {
	if worker == "" {
		return 0, errors.New("frontier: register: empty worker id")
	}
	n, err := registerScript.Run(ctx, f.c, []string{f.keys.Workers, f.keys.Config}, worker, f.o.Lease.Milliseconds(), f.o.Instance).Int64()
	switch {
	case keyspace.IsGone(err):
		return 0, ErrGone
	case err != nil:
		return 0, fmt.Errorf("frontier: register: %w", err)
	case n > 0:
		return time.Duration(n) * time.Millisecond, ErrIDInUse
	}
	return 0, nil
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

// Deregister removes a stopped worker from the registry at once (it would
// otherwise count as alive until its last heartbeat's lease ran out).
// ZREM never creates a key: safe on a crawl that is gone.
func (f *shard) Deregister(ctx context.Context, worker string) error {
	pipe := f.c.Pipeline()
	pipe.ZRem(ctx, f.keys.Workers, worker)
	pipe.HDel(ctx, f.keys.WorkerInfo, worker)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("frontier: deregister: %w", err)
	}
	return nil
}

// WorkerForgetAfter is how long a worker that stopped being alive stays in
// the registry.
const WorkerForgetAfter = time.Minute

// Workers lists the workers alive now: each sent a heartbeat within its
// lease length, and has not deregistered.
func (f Registry) Workers(ctx context.Context) ([]string, error) {
	return f.workersWhere(ctx, true)
}

// Lapsed lists the registered workers whose registration has lapsed (their
// last heartbeat is over a lease old) and that the registry has not
// forgotten yet: stopped without deregistering, or alive but unable to
// heartbeat, as when Redis refuses writes.
func (f Registry) Lapsed(ctx context.Context) ([]string, error) {
	return f.workersWhere(ctx, false)
}

func (f Registry) workersWhere(ctx context.Context, alive bool) ([]string, error) {
	all, err := f.WorkersNow(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, w := range all {
		if w.Alive == alive {
			out = append(out, w.ID)
		}
	}
	return out, nil
}

// WorkerNow is a registered worker as WorkersNow reads it.
type WorkerNow struct {
	ID    string `json:"id"`
	Alive bool   `json:"alive"` // heartbeat within its lease, not deregistered
	// Pages it finished and leases it held, by its last heartbeat; Beat
	// is how long ago that was (Redis's clock). A worker whose heartbeat
	// carried no note (an older version) has Beat -1.
	Pages  int64         `json:"pages"`
	Leases int64         `json:"leases"`
	Beat   time.Duration `json:"beat_ago_ns"`
}

// WorkersNow lists the registered workers, alive or lapsed and not yet
// forgotten (the registry is the first shard's), with what their last
// heartbeats said: one round trip.
func (f Registry) WorkersNow(ctx context.Context) ([]WorkerNow, error) {
	k := f.fs[0].keys
	pipe := f.c.Pipeline()
	now := pipe.Time(ctx)
	reg := pipe.ZRangeWithScores(ctx, k.Workers, 0, -1)
	info := pipe.HGetAll(ctx, k.WorkerInfo)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("frontier: workers: %w", err)
	}
	nowMs := now.Val().UnixMilli()
	out := make([]WorkerNow, 0, len(reg.Val()))
	for _, z := range reg.Val() {
		w := WorkerNow{ID: z.Member.(string), Alive: int64(z.Score) >= nowMs, Beat: -1}
		var beat int64
		if n, _ := fmt.Sscanf(info.Val()[w.ID], "%d %d %d", &w.Pages, &w.Leases, &beat); n == 3 {
			w.Beat = max(time.Duration(nowMs-beat)*time.Millisecond, 0)
		}
		out = append(out, w)
	}
	return out, nil
}

// Heartbeat records that worker is alive (in the first shard, where the
// crawl's registry is) and extends its leases, each in its own shard: one
// call a shard with leases, in one pipeline.
func (f Registry) Heartbeat(ctx context.Context, worker string, pages int64, leases []*Lease) (int, error) {
	by := make([][]*Lease, len(f.fs))
	for _, l := range leases {
		by[f.Home(l)] = append(by[f.Home(l)], l)
	}
	pipe := f.c.Pipeline()
	reads := make([]func() (int, error), len(f.fs))
	for sh, part := range f.fs {
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
			return held, f.in(sh, err)
		}
		held += n
	}
	return held, nil
}

// Register adds worker to the crawl's registry (in the first shard).
func (f Registry) Register(ctx context.Context, worker string) (time.Duration, error) {
	return f.fs[0].Register(ctx, worker)
}

// Deregister removes a stopped worker from the registry.
func (f Registry) Deregister(ctx context.Context, worker string) error {
	return f.fs[0].Deregister(ctx, worker)
}
