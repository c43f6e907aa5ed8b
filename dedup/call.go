package dedup

import (
	"context"
	"errors"
	"fmt"

	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// A Call is one call of a script that requires the module bloom, over at most one batch
// of items (MaxBatch), made ready to go in a pipeline with calls to other
// keys: Queue adds it, Result reads its reply once the pipeline ran. A
// reply that asks for the call again (another worker added a layer, a
// layer must be allocated, Redis lost its script cache) wrote nothing, and
// Result makes the call again on its own, as Exec would have; so a
// pipeline of Calls is one round trip whenever the filter is as last seen.
type Call struct {
	f       *Filter
	s       *redis.Script
	items   []string
	perItem []any
	keys    []string
	fixed   []any
	cmd     *redis.Cmd
}

// NewCall prepares a call of s over items, as Exec would make it.
func (f *Filter) NewCall(s *redis.Script, items []string, perItem []any, keys []string, fixed []any) (*Call, error) {
	if perItem != nil && len(perItem) != len(items) {
		return nil, fmt.Errorf("dedup: %d per-item arguments for %d items", len(perItem), len(items))
	}
	if len(items) > f.MaxBatch() {
		return nil, fmt.Errorf("dedup: %d items for one call (at most %d)", len(items), f.MaxBatch())
	}
	return &Call{f: f, s: s, items: items, perItem: perItem, keys: keys, fixed: fixed}, nil
}

// MaxBatch is how many items one call of the filter's scripts takes.
func (f *Filter) MaxBatch() int { return int(min(maxBatch, f.params.Capacity)) }

// Queue adds the call to pipe (by its script's hash: Result falls back to
// a call of its own if Redis does not have the script).
func (c *Call) Queue(ctx context.Context, pipe redis.Pipeliner) {
	k, a := c.f.args(c.items, true, false, c.perItem, c.keys, c.fixed)
	c.cmd = c.s.EvalSha(ctx, pipe, k, a...)
}

// NoScript reports whether the pipeline found Redis without the call's
// script: the caller may load it (Script.Load) and queue the call again,
// rather than have Result make it again on its own.
func (c *Call) NoScript() bool {
	return c.cmd != nil && script.IsNoScript(c.cmd.Err())
}

// Result is the call's flags and the tail of its reply, as Exec and
// ExecBatch return them, once the pipeline it was queued in ran.
func (c *Call) Result(ctx context.Context) ([]bool, []any, error) {
	if c.cmd == nil {
		return nil, nil, errors.New("dedup: a call read before it was queued")
	}
	res, err := c.cmd.Slice()
	if script.IsNoScript(err) {
		return c.f.execChunk(ctx, c.s, true, c.items, c.perItem, c.keys, c.fixed)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("dedup: %w", err)
	}
	flags, tail, again, err := c.f.read(ctx, res, len(c.items))
	if err != nil || again == retryNone {
		return flags, tail, err
	}
	return c.f.execChunk(ctx, c.s, true, c.items, c.perItem, c.keys, c.fixed)
}
