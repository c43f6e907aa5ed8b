package fence_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/internal/redistest"
)

var write = fence.NewScript("fence/test", `redis.call('SET', KEYS[2], ARGV[2]) return 'OK'`)

// Only the writer whose epoch is the counter's value writes; an older
// epoch, a newer one, and a missing counter are all refused before the
// body runs.
func TestOnlyTheCurrentEpochWrites(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		const epochKey, data = "lock:{x}:epoch", "data:{x}"
		for _, tc := range []struct {
			counter string // "" for none
			epoch   int64
			ok      bool
		}{
			{"", 1, false}, {"2", 1, false}, {"2", 3, false}, {"2", 2, true},
		} {
			s.Client.Del(ctx, epochKey, data)
			if tc.counter != "" {
				s.Client.Set(ctx, epochKey, tc.counter, 0)
			}
			_, err := write.Run(ctx, s.Client, epochKey, tc.epoch, []string{data}, "written")
			wrote := s.Client.Get(ctx, data).Val() == "written"
			if tc.ok != (err == nil) || tc.ok != wrote || !tc.ok && !errors.Is(err, fence.ErrFenced) {
				t.Errorf("counter %q, epoch %d: err %v, wrote %v; want ok=%v", tc.counter, tc.epoch, err, wrote, tc.ok)
			}
		}
	})
}

// Where the counter is out of reach, a slot's own fence remembers the
// highest epoch that wrote there: the same epoch and newer ones write (a
// newer one raises the fence), an older one is refused before the body
// runs, and a first writer starts the fence.
func TestRaisingFenceRefusesOlderEpochs(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		const fenceKey, data = "shard:{y}:fence", "data:{y}"
		for i, tc := range []struct {
			epoch int64
			ok    bool
			fence string // after the call
		}{
			{3, true, "3"}, {3, true, "3"}, {2, false, "3"}, {5, true, "5"}, {4, false, "5"}, {1, false, "5"},
		} {
			s.Client.Del(ctx, data)
			_, err := write.RunRaising(ctx, s.Client, fenceKey, tc.epoch, []string{data}, "written")
			wrote := s.Client.Get(ctx, data).Val() == "written"
			if tc.ok != (err == nil) || tc.ok != wrote || !tc.ok && !errors.Is(err, fence.ErrFenced) {
				t.Errorf("call %d, epoch %d: err %v, wrote %v; want ok=%v", i, tc.epoch, err, wrote, tc.ok)
			}
			if got := s.Client.Get(ctx, fenceKey).Val(); got != tc.fence {
				t.Errorf("call %d, epoch %d: fence %q; want %q", i, tc.epoch, got, tc.fence)
			}
		}
	})
}
