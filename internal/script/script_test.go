package script_test

import (
	"context"
	"testing"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// A pipeline that finds Redis without the script (flushed) answers
// NOSCRIPT; Result makes the call on its own, which loads the script, and
// the next pipeline's call runs by its SHA.
func TestAPipelinedCallSurvivesAFlushedScriptCache(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		incr := redis.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)
		s.Client.ScriptFlush(ctx)
		for round, want := range []int64{2, 4} {
			pipe := s.Client.Pipeline()
			q := script.Queue(ctx, pipe, incr, []string{"n"}, 2)
			pipe.Exec(ctx)
			if got := q.NoScript(); got != (round == 0) {
				t.Fatalf("round %d: NoScript = %v; want %v (flushed before the first only)", round, got, round == 0)
			}
			res, err := q.Result(ctx, s.Client)
			if err != nil || res != want {
				t.Fatalf("round %d: Result = %v, %v; want %d", round, res, err, want)
			}
		}
	})
}
