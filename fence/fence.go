// Package fence is the storage side of fencing tokens: a Lua script whose
// writes are refused unless the writer's epoch is the newest one minted.
//
// A lock alone cannot stop a holder that was paused (a GC pause, SIGSTOP,
// a slow network) past its TTL: it wakes up believing it still holds the
// lock, and writes. The remedy (Kleppmann, "How to do distributed
// locking") is a token that grows with every grant of the lock — the
// epoch leader/ mints in the same script that takes the lock — and a store
// that refuses a write carrying an older token than one it has seen. In
// Redis the store is the script itself: fence.lua runs first and refuses
// the write before the body runs when the epoch counter holds another
// value than the writer's epoch.
//
// The package depends on go-redis only: whatever mints the epochs (here
// leader/) and whatever writes under them (here frontier/'s sweep) meet in
// the epoch key and in nothing else.
package fence

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"

	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// ErrFenced: a fenced write carried an epoch older than the newest minted.
var ErrFenced = errors.New("fence: write fenced off by a newer epoch")

//go:embed fence.lua
var fenceSrc string

//go:embed raise.lua
var raiseSrc string

// Script is a Lua script whose body runs only for a writer whose epoch is
// the current one. The body's own keys start at KEYS[2] and its arguments
// at ARGV[2]: KEYS[1] is the epoch counter and ARGV[1] the writer's epoch.
type Script struct {
	s, raise *redis.Script
}

// NewScript wraps body with the fencing check; name is the script's for
// script.Scripts.
func NewScript(name, body string) *Script {
	return &Script{s: script.New(name, fenceSrc+"\n"+body), raise: script.New(name+"+raise", raiseSrc+"\n"+body)}
}

// Run runs the script as the writer with the given epoch, against the
// epoch counter at epochKey. A stale epoch yields an error that wraps
// ErrFenced, and the body does not run.
func (f *Script) Run(ctx context.Context, c redis.Scripter, epochKey string, epoch int64, keys []string, args ...any) (any, error) {
	return f.run(ctx, f.s, c, epochKey, epoch, keys, args)
}

// RunRaising runs the script as the writer with the given epoch where the
// epoch counter is out of reach (another hash slot of a Redis Cluster):
// against fenceKey, in the script's own slot, which keeps the highest epoch
// that ran the script there. A lower epoch is refused (ErrFenced); a higher
// one raises it. A replaced leader is so fenced off from each slot as soon
// as its successor has written there — not at once everywhere, as Run's
// check against the counter does; each slot's writes stay ordered.
func (f *Script) RunRaising(ctx context.Context, c redis.Scripter, fenceKey string, epoch int64, keys []string, args ...any) (any, error) {
	return f.run(ctx, f.raise, c, fenceKey, epoch, keys, args)
}

func (f *Script) run(ctx context.Context, s *redis.Script, c redis.Scripter, key string, epoch int64, keys []string, args []any) (any, error) {
	allKeys := append([]string{key}, keys...)
	allArgs := append([]any{epoch}, args...)
	return fenceResult(s.Run(ctx, c, allKeys, allArgs...).Result())
}

// fenceResult is a fenced call's reply, its refusal as ErrFenced.
func fenceResult(res any, err error) (any, error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, Refusal(err)
	}
	return res, err
}

// Refusal is err as ErrFenced when it is a fenced script's refusal (a
// reply starting "FENCED "), for stores that apply the fence's rule in a
// script of their own; any other error is returned as it is.
func Refusal(err error) error {
	if err == nil {
		return nil
	}
	if msg, ok := strings.CutPrefix(err.Error(), "FENCED "); ok {
		return fmt.Errorf("%w: %s", ErrFenced, msg)
	}
	return err
}

// A Pending is a fenced call queued in a pipeline (Queue): Result reads
// it once the pipeline ran, making the call again on its own if Redis did
// not have the script.
type Pending struct {
	call *script.Queued
}

// Queue adds to pipe the call Run (or, raising, RunRaising) would make.
func (f *Script) Queue(ctx context.Context, pipe redis.Pipeliner, raising bool, key string, epoch int64, keys []string, args ...any) *Pending {
	s := f.s
	if raising {
		s = f.raise
	}
	return &Pending{call: script.Queue(ctx, pipe, s, append([]string{key}, keys...), append([]any{epoch}, args...)...)}
}

// Requeue adds the call to pipe again after the pipeline it was in found
// Redis without its script (NoScript), once Load put it there.
func (p *Pending) Requeue(ctx context.Context, pipe redis.Pipeliner) { p.call.Requeue(ctx, pipe) }

// NoScript reports whether the pipeline found Redis without the script.
func (p *Pending) NoScript() bool { return p.call.NoScript() }

// Load puts the scripts of calls in Redis (on every master of a
// Cluster), each once.
func Load(ctx context.Context, c redis.Scripter, calls []*Pending) error {
	loaded := map[*redis.Script]bool{}
	for _, p := range calls {
		s := p.call.Script()
		if loaded[s] {
			continue
		}
		if err := s.Load(ctx, c).Err(); err != nil {
			return err
		}
		loaded[s] = true
	}
	return nil
}

// Result is what Run would have returned, once the pipeline ran; c makes
// the call again should Redis not have had the script.
func (p *Pending) Result(ctx context.Context, c redis.Scripter) (any, error) {
	return fenceResult(p.call.Result(ctx, c))
}
