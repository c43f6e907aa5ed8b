package frontier_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A group's reader that dies before it acknowledges is given its records
// again; two readers of a group split the records, none to both; the
// stream is trimmed below what every group acknowledged, and not past a
// group that read nothing; Groups says what each has pending and not yet
// read.
func TestResultsGroupsDeliverAtLeastOnceAndTrimOnlyWhatAllAcked(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		results := keyspace.KeysFor("t").Results
		for i := range 10 {
			if err := s.Client.XAdd(ctx, &redis.XAddArgs{Stream: results, Values: []string{"rec", fmt.Sprintf(`{"url":"http://a/%d"}`, i), "new_links", "0"}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		r := e.f.Records
		if err := r.JoinGroup(ctx, "sink"); err != nil {
			t.Fatal(err)
		}
		first, err := r.ReadGroup(ctx, "sink", "a", false, 4)
		if err != nil || len(first) != 4 {
			t.Fatalf("a read %d, %v; want 4", len(first), err)
		}
		// a dies before it acknowledges: restarted, it is given them again.
		again, err := r.ReadGroup(ctx, "sink", "a", true, 100)
		if err != nil || len(again) != 4 || again[0].Record.ID != first[0].Record.ID {
			t.Fatalf("a's pending records: %d, %v; want the same 4", len(again), err)
		}
		if err := r.Ack(ctx, "sink", again); err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, reader := range []string{"a", "b", "a", "b", "a", "b"} {
			ds, err := r.ReadGroup(ctx, "sink", reader, false, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				if by, ok := seen[d.Record.ID]; ok {
					t.Fatalf("%s given to %s and %s", d.Record.ID, by, reader)
				}
				seen[d.Record.ID] = reader
			}
			if err := r.Ack(ctx, "sink", ds); err != nil {
				t.Fatal(err)
			}
		}
		if len(seen) != 6 {
			t.Fatalf("a and b were given %d records of the 6 left", len(seen))
		}
		if err := r.JoinGroup(ctx, "slow"); err != nil { // a second group, that reads nothing
			t.Fatal(err)
		}
		if n, err := r.TrimAcked(ctx); err != nil || n != 0 {
			t.Fatalf("trimmed %d, %v; want none: the slow group read nothing", n, err)
		}
		gs, err := r.Groups(ctx)
		if err != nil || len(gs) != 2 || gs[0].Name != "sink" || gs[0].Behind() != 0 || gs[1].Name != "slow" || gs[1].Behind() != 10 {
			t.Fatalf("groups %+v, %v; want sink caught up and slow 10 behind", gs, err)
		}
		slow, err := r.ReadGroup(ctx, "slow", "c", false, 7)
		if err != nil || len(slow) != 7 {
			t.Fatalf("slow read %d, %v", len(slow), err)
		}
		if err := r.Ack(ctx, "slow", slow[:5]); err != nil { // two of its seven still pending
			t.Fatal(err)
		}
		if n, err := r.TrimAcked(ctx); err != nil || n != 5 {
			t.Fatalf("trimmed %d, %v; want the 5 both groups acknowledged", n, err)
		}
		if n := s.Client.XLen(ctx, results).Val(); n != 5 {
			t.Fatalf("%d records left; want 5 (2 pending in slow, 3 it was not given)", n)
		}
	})
}
