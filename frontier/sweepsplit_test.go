package frontier

import (
	"context"
	"errors"
	"testing"

	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A sweep cut in two by a new leader (its epoch raised between the
// sweep's two scripts, as another scheduler's election may): the first
// script's work stands — an expired lease past its attempts failed, with
// its record, which the scheduler still gets — and the second, refused
// by the fence, decides nothing: the crawl, now empty, is not called
// over, and the error is the fence's. Uncut, the same sweep ends it.
func TestASweepCutInTwoByANewLeaderDecidesNothing(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		for _, cut := range []bool{true, false} {
			name := "uncut"
			if cut {
				name = "cut"
			}
			f := openShards(t, s.Client, name, 1, 0)
			epochKey := "crawl:{" + name + "}:leader:epoch"
			s.Client.Set(ctx, epochKey, "1", 0)
			if _, err := f.Enqueue(ctx, []Item{{URL: "http://a.example/"}}); err != nil {
				t.Fatal(err)
			}
			// A sweep first, the URL queued: the scripts are loaded (a
			// call that finds Redis without its script goes again when its
			// reply is read, after the pipeline's INCR).
			if _, err := f.Schedule(ctx, epochKey, 1, 1, 100, 0); err != nil {
				t.Fatal(err)
			}
			x, err := f.Exchange(ctx, nil, nil, 1)
			if err != nil || len(x.Popped) != 1 {
				t.Fatalf("pop: %+v, %v", x, err)
			}
			k := keyspace.KeysFor(name)
			held := s.Client.ZRange(ctx, k.Leases, 0, -1).Val()
			if len(held) != 1 {
				t.Fatalf("leases %v; want the one popped", held)
			}
			s.Client.ZAdd(ctx, k.Leases, redis.Z{Score: 1, Member: held[0]}) // expired long ago
			sh := f.fs[0]
			keys := keysOf(scheduleKeyList, sh)
			args := scheduleArgs{MaxAttempts: 1, Limit: 100, FailedCap: failedCap, ResultsCap: sh.resultsCap, Mode: sweepAlone,
				OutboxAge: sh.o.outboxAge().Milliseconds(), Instance: sh.o.Instance, Settings: sh.policy().Version}.encode()
			pipe := s.Client.Pipeline()
			calls := sweepCalls{scheduleScript.Queue(ctx, pipe, false, epochKey, 1, keys, args)}
			if cut {
				pipe.Incr(ctx, epochKey) // a new leader, elected between the two
			}
			calls[1] = scheduleEndScript.Queue(ctx, pipe, false, epochKey, 1, keys, args)
			pipe.Exec(ctx)
			sw, err := sh.readSchedule(ctx, calls)
			done := s.Client.Exists(ctx, k.DoneFlag).Val() == 1
			if !cut {
				if err != nil || !sw.CrawlOver || !done || sw.Failed != 1 || len(sw.Records) != 1 {
					t.Fatalf("uncut: %+v, %v, done flag %v; want the lease failed, its record, the crawl over", sw, err, done)
				}
				continue
			}
			if !errors.Is(err, fence.ErrFenced) {
				t.Fatalf("cut: %v; want the second script fenced", err)
			}
			if sw.CrawlOver || done {
				t.Fatalf("cut: the crawl called over (sweep %+v, done flag %v) by a sweep whose end was fenced", sw, done)
			}
			if len(sw.Records) != 1 || s.Client.LLen(ctx, k.Failed).Val() != 1 || s.Client.ZCard(ctx, k.Leases).Val() != 0 {
				t.Fatalf("cut: records %v, failed list %d, leases %d; want the first script's failed lease and its record",
					sw.Records, s.Client.LLen(ctx, k.Failed).Val(), s.Client.ZCard(ctx, k.Leases).Val())
			}
		}
	})
}
