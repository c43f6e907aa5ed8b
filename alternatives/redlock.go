package alternatives

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redcrawl/crawler/fence"
	"github.com/redis/go-redis/v9"
)

// Redlock is the distributed lock of the Redis documentation's "Distributed
// Locks with Redis": the lock taken on N independent masters, held when a
// majority granted it within its validity (the TTL less the time taken
// and a drift allowance for the masters' clocks), and released on all.
// Each master's grant also mints that master's epoch, for a store that
// fences (FenceEach).
type Redlock struct {
	Masters []*redis.Client
	// Drift is the clock drift allowed, as a share of the TTL (the
	// description's 0.01), plus 2 ms.
	Drift float64
}

// ErrNotGranted: no majority granted the lock within its validity.
var ErrNotGranted = errors.New("redlock: no majority granted the lock")

// A Grant is a held Redlock: its value, until when it is surely held by
// the local clock, and each master's epoch (0 where it did not grant).
type Grant struct {
	Key    string
	Value  string
	Until  time.Time
	Epochs []int64
}

// Lock asks every master at once (each with a timeout well under the TTL,
// so a dead master costs little) and holds the lock when a majority
// granted it and time is left; otherwise it releases it on all masters and
// returns ErrNotGranted.
func (r *Redlock) Lock(ctx context.Context, key string, ttl time.Duration) (*Grant, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	g := &Grant{Key: key, Value: hex.EncodeToString(raw[:]), Epochs: make([]int64, len(r.Masters))}
	start := time.Now()
	var wg sync.WaitGroup
	for i, m := range r.Masters {
		wg.Go(func() {
			mctx, cancel := context.WithTimeout(ctx, max(ttl/10, 5*time.Millisecond))
			defer cancel()
			e, err := redlockAcquire.Run(mctx, m, []string{key, key + ":epoch"}, g.Value, ttl.Milliseconds()).Int64()
			if err == nil {
				g.Epochs[i] = e
			}
		})
	}
	wg.Wait()
	granted := 0
	for _, e := range g.Epochs {
		if e > 0 {
			granted++
		}
	}
	drift := time.Duration(float64(ttl)*r.drift()) + 2*time.Millisecond
	g.Until = start.Add(ttl - drift)
	if granted > len(r.Masters)/2 && time.Now().Before(g.Until) {
		return g, nil
	}
	r.Unlock(context.WithoutCancel(ctx), g)
	return nil, fmt.Errorf("%w: %d of %d", ErrNotGranted, granted, len(r.Masters))
}

func (r *Redlock) drift() float64 {
	if r.Drift > 0 {
		return r.Drift
	}
	return 0.01
}

// Unlock releases the grant on every master, granted or not.
func (r *Redlock) Unlock(ctx context.Context, g *Grant) {
	var wg sync.WaitGroup
	for _, m := range r.Masters {
		wg.Go(func() { redlockRelease.Run(ctx, m, []string{g.Key}, g.Value) })
	}
	wg.Wait()
}

// WriteFencedEach writes value at key of the store for the grant's holder,
// unless a later grant's holder wrote there first (fence_each.lua): the
// error then wraps fence.ErrFenced.
func WriteFencedEach(ctx context.Context, store redis.Scripter, key, value string, epochs []int64) error {
	keys := []string{key}
	args := []any{value}
	for i, e := range epochs {
		keys = append(keys, fmt.Sprintf("%s:fence:%d", key, i+1))
		args = append(args, e)
	}
	return fence.Refusal(fenceEach.Run(ctx, store, keys, args...).Err())
}
