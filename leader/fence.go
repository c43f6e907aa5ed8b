package leader

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed fence.lua
var fenceSrc string

// FencedScript is a Lua script whose writes are refused unless the caller's
// epoch is the newest one minted for the lock: the storage-side half of
// fencing. The body is appended to a prelude that checks KEYS[1] (the epoch
// counter, see EpochKey) against ARGV[1] (the writer's epoch); the body's
// own keys therefore start at KEYS[2] and its arguments at ARGV[2].
type FencedScript struct {
	s *redis.Script
}

// NewFencedScript wraps body with the fencing check.
func NewFencedScript(body string) *FencedScript {
	return &FencedScript{s: redis.NewScript(fenceSrc + "\n" + body)}
}

// Run runs the script as the writer with the given epoch. A stale epoch
// yields an error that wraps ErrFenced, and the body does not run.
func (f *FencedScript) Run(ctx context.Context, c redis.Scripter, lockKey string, epoch int64, keys []string, args ...any) (any, error) {
	allKeys := append([]string{EpochKey(lockKey)}, keys...)
	allArgs := append([]any{epoch}, args...)
	res, err := f.s.Run(ctx, c, allKeys, allArgs...).Result()
	if err != nil && err != redis.Nil {
		if strings.HasPrefix(err.Error(), "FENCED ") {
			return nil, fmt.Errorf("%w: %s", ErrFenced, strings.TrimPrefix(err.Error(), "FENCED "))
		}
		return nil, err
	}
	return res, err
}
