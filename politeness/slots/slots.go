package slots

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed *.lua
	luaFiles embed.FS
	// Lua is the package's Lua: its module slots (slots.lua), a leased
	// semaphore's steps as Lua functions, which the Semaphore's scripts
	// require, and so does the frontier's pop, which takes a host's slot
	// in the same call that grants the host's URL.
	Lua           = script.NewLib("slots", luaFiles)
	acquireScript = Lua.Script("acquire")
	renewScript   = Lua.Script("renew")
)

// ErrSize: a semaphore of no slots admits nobody, ever.
var ErrSize = errors.New("slots: a semaphore needs at least one slot")

// Semaphore is a counting semaphore in Redis, shared by every process that
// uses the same keys: at most Size holders of a key at once, each holding
// its slot as a lease of Lease, which it renews while it works and
// releases when done. A holder that dies without releasing loses its slot
// when the lease lapses: no slot is held for ever. A Semaphore is
// immutable and safe for concurrent use.
type Semaphore struct {
	c     redis.Cmdable
	size  int
	lease time.Duration
}

// New returns a Semaphore of size slots a key, each held for lease
// (rounded to the millisecond, 1 ms at least) unless renewed.
func New(c redis.Cmdable, size int, lease time.Duration) (*Semaphore, error) {
	if size < 1 {
		return nil, fmt.Errorf("%w (got %d)", ErrSize, size)
	}
	return &Semaphore{c: c, size: size, lease: max(lease.Round(time.Millisecond), time.Millisecond)}, nil
}

// A Grant is what Acquire decided: OK, the holder has a slot (Held
// counting it); or every slot is held (Held of them), and the first lapses
// in Wait unless released sooner.
type Grant struct {
	OK   bool
	Held int
	Wait time.Duration
}

// Acquire asks for a slot of key for holder (an id unique among the key's
// holders: a worker's, a request's). A holder that has one already has
// its lease extended, so a call retried after a lost reply takes no
// second slot. One atomic script on the server's clock.
func (s *Semaphore) Acquire(ctx context.Context, key, holder string) (Grant, error) {
	res, err := acquireScript.Run(ctx, s.c, []string{key}, s.size, s.lease.Milliseconds(), holder).Int64Slice()
	if err != nil {
		return Grant{}, fmt.Errorf("slots: acquire %s: %w", key, err)
	}
	g := Grant{OK: res[0] == 1, Held: int(res[1])}
	if !g.OK && len(res) > 2 {
		g.Wait = time.Duration(res[2]) * time.Millisecond
	}
	return g, nil
}

// Renew extends holder's slot of key by a lease from now. It reports
// false when the slot was lost (its lease lapsed first: another holder
// may have it now), which a holder takes as its cue to stop: the work it
// guarded is no longer counted.
func (s *Semaphore) Renew(ctx context.Context, key, holder string) (bool, error) {
	n, err := renewScript.Run(ctx, s.c, []string{key}, s.lease.Milliseconds(), holder).Int64()
	if err != nil {
		return false, fmt.Errorf("slots: renew %s: %w", key, err)
	}
	return n == 1, nil
}

// Release gives holder's slot of key back (nothing if it holds none).
func (s *Semaphore) Release(ctx context.Context, key, holder string) error {
	if err := s.c.ZRem(ctx, key, holder).Err(); err != nil {
		return fmt.Errorf("slots: release %s: %w", key, err)
	}
	return nil
}
