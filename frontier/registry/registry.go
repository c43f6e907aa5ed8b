// Package registry is the crawl's workers: the first shard's sorted set
// "workers" (worker -> when its registration lapses) and its hash
// "workerinfo" (worker -> what its last heartbeat said). Register claims
// an id, the frontier's heartbeat keeps it alive (and renews the worker's
// leases in every shard: frontier.Registry.Heartbeat), Deregister ends
// it; a reader lists who is alive and who lapsed.
package registry

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/queue"
	"github.com/redcrawl/crawler/internal/script"
)

// Roll is the roll of the crawl's workers (frontier.Frontier.Registry).
type Roll struct {
	keyspace.Set
	// Lease is how long a registration lasts without a heartbeat
	// (frontier.Options.Lease), read at each call.
	Lease func() time.Duration
}

// ErrIDInUse: a live worker is registered under the id already (two
// processes given one --id, or an earlier run of this one that was killed
// and whose registration has not lapsed yet). Nothing was written.
var ErrIDInUse = errors.New("frontier: a live worker has this id")

var (
	//go:embed register.lua
	luaFiles       embed.FS
	lua            = script.NewLib("frontier/registry", luaFiles, queue.Lua)
	registerScript = lua.Script("register")
)

// Register adds worker to the crawl's registry, alive for one lease
// length (Heartbeat keeps it so). If a live worker holds the id, it
// returns ErrIDInUse and how long until that registration lapses, should
// its holder not heartbeat again; keyspace.ErrGone when the crawl is gone.
func (f Roll) Register(ctx context.Context, worker string) (time.Duration, error) {
	if worker == "" {
		return 0, errors.New("frontier: register: empty worker id")
	}
	n, err := registerScript.Run(ctx, f.C, []string{f.Keys[0].Workers, f.Keys[0].Config}, worker, f.Lease().Milliseconds(), f.Instance).Int64()
	switch {
	case keyspace.IsGone(err):
		return 0, keyspace.ErrGone
	case err != nil:
		return 0, fmt.Errorf("frontier: register: %w", err)
	case n > 0:
		return time.Duration(n) * time.Millisecond, ErrIDInUse
	}
	return 0, nil
}

// Deregister removes a stopped worker from the registry at once (it would
// otherwise count as alive until its last heartbeat's lease ran out).
// ZREM never creates a key: safe on a crawl that is gone.
func (f Roll) Deregister(ctx context.Context, worker string) error {
	pipe := f.C.Pipeline()
	pipe.ZRem(ctx, f.Keys[0].Workers, worker)
	pipe.HDel(ctx, f.Keys[0].WorkerInfo, worker)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("frontier: deregister: %w", err)
	}
	return nil
}

// ForgetAfter is how long a worker that stopped being alive stays in
// the registry.
const ForgetAfter = time.Minute

// Workers lists the workers alive now: each sent a heartbeat within its
// lease length, and has not deregistered.
func (f Roll) Workers(ctx context.Context) ([]string, error) {
	return f.workersWhere(ctx, true)
}

// Lapsed lists the registered workers whose registration has lapsed (their
// last heartbeat is over a lease old) and that the registry has not
// forgotten yet: stopped without deregistering, or alive but unable to
// heartbeat, as when Redis refuses writes.
func (f Roll) Lapsed(ctx context.Context) ([]string, error) {
	return f.workersWhere(ctx, false)
}

func (f Roll) workersWhere(ctx context.Context, alive bool) ([]string, error) {
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

// Worker is a registered worker as WorkersNow reads it.
type Worker struct {
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
func (f Roll) WorkersNow(ctx context.Context) ([]Worker, error) {
	k := f.Keys[0]
	pipe := f.C.Pipeline()
	now := pipe.Time(ctx)
	reg := pipe.ZRangeWithScores(ctx, k.Workers, 0, -1)
	info := pipe.HGetAll(ctx, k.WorkerInfo)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("frontier: workers: %w", err)
	}
	nowMs := now.Val().UnixMilli()
	out := make([]Worker, 0, len(reg.Val()))
	for _, z := range reg.Val() {
		w := Worker{ID: z.Member.(string), Alive: int64(z.Score) >= nowMs, Beat: -1}
		var beat int64
		if n, _ := fmt.Sscanf(info.Val()[w.ID], "%d %d %d", &w.Pages, &w.Leases, &beat); n == 3 {
			w.Beat = max(time.Duration(nowMs-beat)*time.Millisecond, 0)
		}
		out = append(out, w)
	}
	return out, nil
}
