package frontier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Register adds worker to the crawl's registry, alive for one lease
// length (Heartbeat keeps it so). If a live worker holds the id, it
// returns ErrIDInUse and how long until that registration lapses, should
// its holder not heartbeat again; ErrGone when the crawl is gone.
func (f *shard) Register(ctx context.Context, worker string) (time.Duration, error) {
	if worker == "" {
		return 0, errors.New("frontier: register: empty worker id")
	}
	n, err := registerScript.Run(ctx, f.c, []string{f.keys.Workers, f.keys.Config}, worker, f.o.Lease.Milliseconds()).Int64()
	switch {
	case isGone(err):
		return 0, ErrGone
	case err != nil:
		return 0, fmt.Errorf("frontier: register: %w", err)
	case n > 0:
		return time.Duration(n) * time.Millisecond, ErrIDInUse
	}
	return 0, nil
}

// Heartbeat records that worker is alive (until one lease length from now)
// and extends the leases it holds; it returns how many were still held,
// or ErrGone when the crawl is gone. A lease extended has its local
// deadline moved on (Lease.Left); one found lost is marked so.
func (f *shard) Heartbeat(ctx context.Context, worker string, leases []*Lease) (int, error) {
	pipe := f.c.Pipeline()
	read := f.queueHeartbeat(ctx, pipe, worker, leases)
	pipe.Exec(ctx) // the call's error is read below
	return read()
}

// queueHeartbeat adds the heartbeat to pipe (Frontier.Heartbeat sends
// every shard's in one pipeline), and returns how to read it.
func (f *shard) queueHeartbeat(ctx context.Context, pipe redis.Pipeliner, worker string, leases []*Lease) func() (int, error) {
	args := []any{worker, f.o.Lease.Milliseconds()}
	for _, l := range leases {
		args = append(args, l.Member())
	}
	keys := []string{f.keys.Leases, f.keys.Workers, f.keys.Config}
	sent := time.Now()
	cmd := renewScript.EvalSha(ctx, pipe, keys, args...)
	return func() (int, error) {
		res, err := cmd.Result()
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			res, err = renewScript.Run(ctx, f.c, keys, args...).Result()
		}
		if isGone(err) {
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
	if err := f.c.ZRem(ctx, f.keys.Workers, worker).Err(); err != nil {
		return fmt.Errorf("frontier: deregister: %w", err)
	}
	return nil
}

// WorkerForgetAfter is how long a worker that stopped being alive stays in
// the registry.
const WorkerForgetAfter = time.Minute

// Workers lists the workers alive now: each sent a heartbeat within its
// lease length, and has not deregistered.
func (f *shard) Workers(ctx context.Context) ([]string, error) {
	now, err := f.c.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("frontier: workers: %w", err)
	}
	return f.c.ZRangeByScore(ctx, f.keys.Workers, &redis.ZRangeBy{
		Min: fmt.Sprint(now.UnixMilli()), Max: "+inf"}).Result()
}

// Lapsed lists the registered workers whose registration has lapsed (their
// last heartbeat is over a lease old) and that the registry has not
// forgotten yet: stopped without deregistering, or alive but unable to
// heartbeat, as when Redis refuses writes.
func (f *shard) Lapsed(ctx context.Context) ([]string, error) {
	now, err := f.c.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("frontier: workers: %w", err)
	}
	return f.c.ZRangeByScore(ctx, f.keys.Workers, &redis.ZRangeBy{
		Min: "-inf", Max: "(" + fmt.Sprint(now.UnixMilli())}).Result()
}
