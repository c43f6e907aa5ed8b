package crawl_test

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
)

// What a hand (or a bug) may leave in the crawl's keys must not make an
// exchange fail half-way: Redis keeps the writes of a script that fails,
// and before, the worker took the failure for a lost reply, sent the batch
// again and again, and the host's queue, its real URLs with it, was gone.

// An element of a host's queue that does not decode is set aside on the
// failed list, named and counted; every URL of the site is still fetched
// and the crawl ends.
func TestACorruptQueueElementIsSetAside(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := smallSite(t, s, "garbage")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		k := keyspace.KeysFor("garbage")
		host := site.Hosts()[0]
		if err := s.Client.RPush(ctx, k.Queues+host, "garbage!!").Err(); err != nil {
			t.Fatal(err)
		}
		runWorkers(t, ctx, s, "garbage", fastOptions("w1"))
		for _, u := range site.Missing() {
			t.Errorf("not fetched: %s", u)
		}
		st, err := status.Read(ctx, s.Client, "garbage")
		if err != nil || !st.Done || st.Counters["corrupt"] != 1 {
			t.Fatalf("status: done %v, corrupt %d (%v); want done, 1", st != nil && st.Done, st.Counters["corrupt"], err)
		}
		failed := s.Client.LRange(ctx, k.Failed, 0, -1).Val()
		if len(failed) != 1 || !strings.Contains(failed[0], "corrupt element of "+k.Queues+host) || !strings.Contains(failed[0], "garbage!!") {
			t.Fatalf("failed list %q; want the element, named with its queue", failed)
		}
		if !strings.Contains(st.String(), "1 corrupt") {
			t.Errorf("status does not say an element was set aside:\n%s", st)
		}
	})
}

// A host's bucket field that is not a number reads as absent, is deleted
// and counted: the crawl goes on at the crawl's rate.
func TestACorruptBucketFieldIsRepaired(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := smallSite(t, s, "badbucket")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		k := keyspace.KeysFor("badbucket")
		host := site.Hosts()[0]
		s.Client.HSet(ctx, k.Buckets+host, "delay", "abc")
		s.Client.HSet(ctx, k.Slowed, host, "1")
		runWorkers(t, ctx, s, "badbucket", fastOptions("w1"))
		for _, u := range site.Missing() {
			t.Errorf("not fetched: %s", u)
		}
		if v := s.Client.HGet(ctx, k.Buckets+host, "delay").Val(); v != "" {
			t.Errorf("the bucket's delay is still %q", v)
		}
		if n, _ := s.Client.HGet(ctx, k.Stats, "corrupt").Int(); n != 1 {
			t.Errorf("corrupt counted %d; want 1", n)
		}
	})
}

// A number the crawl's end rests on that is not one (stats' queued), or a
// key of the wrong kind, stops the worker before the exchange writes
// anything, with one line naming the key and what is wrong with it: the
// queues, the Bloom filter and the worker's exchange count are as they
// were, and repaired by hand the crawl goes on to its end.
func TestACorruptCounterStopsTheWorkerBeforeAnyWrite(t *testing.T) {
	k := keyspace.KeysFor("badcount")
	for _, c := range []struct {
		name           string
		break_, repair func(context.Context, *redistest.Server)
		says           string
	}{
		{"a counter not a number",
			func(ctx context.Context, s *redistest.Server) { s.Client.HSet(ctx, k.Stats, "queued", "abc") },
			func(ctx context.Context, s *redistest.Server) { s.Client.HSet(ctx, k.Stats, "queued", "2") }, // the two roots
			k.Stats + ` field queued holds "abc", not a whole number`},
		{"a key of the wrong kind",
			func(ctx context.Context, s *redistest.Server) {
				s.Client.Rename(ctx, k.Lengths, k.Lengths+".kept")
				s.Client.Set(ctx, k.Lengths, "x", 0)
			},
			func(ctx context.Context, s *redistest.Server) { s.Client.Rename(ctx, k.Lengths+".kept", k.Lengths) },
			k.Lengths + " is a string, not a hash"},
	} {
		t.Run(c.name, func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, s *redistest.Server) {
				site := smallSite(t, s, "badcount")
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				c.break_(ctx, s)
				before := snapshot(ctx, t, s, "badcount")
				w, err := crawl.NewWorker(ctx, s.Client, "badcount", fastOptions("w1"))
				if err != nil {
					t.Fatal(err)
				}
				err = w.Run(ctx)
				if !errors.Is(err, frontier.ErrScript) || !strings.Contains(err.Error(), c.says) {
					t.Fatalf("Run = %v; want ErrScript saying %q", err, c.says)
				}
				if ctx.Err() != nil {
					t.Fatal("the worker ran to the test's deadline: it retried")
				}
				if after := snapshot(ctx, t, s, "badcount"); after != before {
					t.Fatalf("the crawl's queues, filter or counts changed:\nbefore %s\nafter  %s", before, after)
				}
				c.repair(ctx, s)
				runWorkers(t, ctx, s, "badcount", fastOptions("w2"))
				for _, u := range site.Missing() {
					t.Errorf("not fetched after the repair: %s", u)
				}
			})
		})
	}
}

// snapshot is what an exchange could have written: the queues, their
// lengths, the stats, the leases and the Bloom filter's count.
func snapshot(ctx context.Context, t *testing.T, s *redistest.Server, name string) string {
	t.Helper()
	k := keyspace.KeysFor(name)
	var b strings.Builder
	keys := s.Client.Keys(ctx, "crawl:{"+name+"}:*").Val()
	sort.Strings(keys)
	for _, key := range keys {
		switch {
		case strings.HasPrefix(key, k.Queues):
			b.WriteString(key + "=" + strings.Join(s.Client.LRange(ctx, key, 0, -1).Val(), ",") + " ")
		case key == k.Lengths || key == k.Stats:
			b.WriteString(key + "=" + flat(s.Client.HGetAll(ctx, key).Val()) + " ")
		case key == k.Leases:
			b.WriteString(key + "=" + strings.Join(s.Client.ZRange(ctx, key, 0, -1).Val(), ",") + " ")
		case s.Client.Type(ctx, key).Val() == "hash" && strings.HasSuffix(key, ":seen"):
			b.WriteString(key + "=" + flat(s.Client.HGetAll(ctx, key).Val()) + " ") // the filter's count
		case strings.HasPrefix(key, k.Counters) || key == k.Results:
			b.WriteString(key + " ") // made by a first exchange
		}
	}
	return b.String()
}

func flat(m map[string]string) string {
	var parts []string
	for f, v := range m {
		parts = append(parts, f+":"+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// A queued URL whose element is corrupted in place (counted when it was
// queued, then overwritten) is set aside by every path that takes URLs off
// a queue, and the crawl's count of queued URLs goes down with it: a pop,
// a block, and a host's page cap each end with nothing counted queued,
// and a worker's crawl ends.
func TestACorruptedQueuedURLLeavesNoCountBehind(t *testing.T) {
	for _, path := range []string{"pop", "block", "page cap"} {
		t.Run(path, func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, s *redistest.Server) {
				site := newPageSite(t, 0, nil)
				set := settings.Default()
				set.Rate, set.AllowPrivate = math.Inf(1), true
				if path == "page cap" {
					set.MaxPagesPerHost = 2
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if _, err := admin.Seed(ctx, s.Client, "bent", set, site.seeds(6)); err != nil {
					t.Fatal(err)
				}
				k := keyspace.KeysFor("bent")
				host := strings.TrimPrefix(site.URL, "http://")
				if err := s.Client.LSet(ctx, k.Queues+host, 3, "garbage!!").Err(); err != nil {
					t.Fatal(err)
				}
				if path == "block" {
					if _, err := admin.ChangeHost(ctx, s.Client, "bent", host, admin.HostChange{Block: true, By: "test", Wait: time.Second}); err != nil {
						t.Fatal(err)
					}
				}
				runWorkers(t, ctx, s, "bent", fastOptions("w1"))
				st, err := status.Read(ctx, s.Client, "bent")
				if err != nil || !st.Done || st.Counters["corrupt"] != 1 || st.Frontier.Queued != 0 {
					t.Fatalf("status: %v\n%s; want done, 1 corrupt, 0 queued", err, st)
				}
			})
		})
	}
}
