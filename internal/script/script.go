// Package script runs Lua scripts in Redis pipelines. A pipeline sends a
// script by its SHA (EVALSHA), as a script's own call does first; unlike
// that call, a pipeline cannot fall back to sending the source when Redis
// does not hold the script (the first run since Redis started, a SCRIPT
// FLUSH, a Cluster master that never saw it). A Queued call does: its
// Result makes the call again on its own, which loads the script for the
// next pipeline. Every pipelined script of the crawler goes through here.
package script

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Queued is a script call added to a pipeline by its SHA.
type Queued struct {
	s    *redis.Script
	keys []string
	args []any
	cmd  *redis.Cmd
}

// Queue adds s's call on keys and args to pipe.
func Queue(ctx context.Context, pipe redis.Pipeliner, s *redis.Script, keys []string, args ...any) *Queued {
	return &Queued{s: s, keys: keys, args: args, cmd: s.EvalSha(ctx, pipe, keys, args...)}
}

// Script is the call's script.
func (q *Queued) Script() *redis.Script { return q.s }

// NoScript reports whether the pipeline found Redis without the script.
// A caller with many such calls may load the script once (Script().Load)
// and Requeue them, rather than have each Result make its own call.
func (q *Queued) NoScript() bool { return IsNoScript(q.cmd.Err()) }

// Requeue adds the call to pipe again.
func (q *Queued) Requeue(ctx context.Context, pipe redis.Pipeliner) {
	q.cmd = q.s.EvalSha(ctx, pipe, q.keys, q.args...)
}

// Cmd is the call's command once its pipeline ran (for its typed readers:
// Slice, Int64 …); when Redis did not hold the script, the call is made
// again on its own through c.
func (q *Queued) Cmd(ctx context.Context, c redis.Scripter) *redis.Cmd {
	if q.NoScript() {
		q.cmd = q.s.Run(ctx, c, q.keys, q.args...)
	}
	return q.cmd
}

// Result is Cmd's reply.
func (q *Queued) Result(ctx context.Context, c redis.Scripter) (any, error) {
	return q.Cmd(ctx, c).Result()
}

// IsNoScript reports whether err is Redis's "no such script" (NOSCRIPT).
func IsNoScript(err error) bool { return redis.HasErrorPrefix(err, "NOSCRIPT") }
