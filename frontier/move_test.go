package frontier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"
)

// Requeue moves a queued URL to its item's priority and leaves the counts
// as one URL's: a URL of another host's compact list, a JSON element (a
// retry's), one at its priority already, one leased, one never queued;
// the moved one is popped first, and every URL once.
func TestRequeueMovesAQueuedURLAndKeepsTheCounts(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		ctx := context.Background()
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}, {URL: "http://a/2"}, {URL: "http://a/3"}, {URL: "http://a/4", Priority: 5},
			{URL: "http://a/5", Attempts: 1, Errors: []string{"x"}}, {URL: "http://a/6"}})
		// http://a/4, of the highest priority, leased: popped, not finished.
		x := e.exchange(t, nil, nil, 1)
		if len(x.Popped) != 1 || x.Popped[0].Item.URL != "http://a/4" {
			t.Fatalf("popped %+v; want http://a/4", x.Popped)
		}
		before := e.sizes(t)
		got, err := e.f.Requeue(ctx, []frontier.Item{{URL: "http://a/3", Priority: 9}, {URL: "http://a/6"},
			{URL: "http://a/5", Priority: 7}, {URL: "http://a/4", Priority: 9}, {URL: "http://a/never", Priority: 9}})
		if err != nil {
			t.Fatal(err)
		}
		if want := []frontier.Requeued{frontier.Moved, frontier.Moved, frontier.Moved, frontier.Moved, frontier.NotSeen}; !slices.Equal(got, want) {
			t.Fatalf("Requeue = %v; want %v (moved, in place, moved, leased, never queued)", got, want)
		}
		if after := e.sizes(t); after != before {
			t.Fatalf("sizes %+v after the moves; want %+v", after, before)
		}
		var order []string
		finish(t, e.f, x.Popped[0], frontier.Outcome{Stat: "done"})
		for l := pop(t, e.f); l != nil; l = pop(t, e.f) {
			order = append(order, l.Item.URL)
			finish(t, e.f, l, frontier.Outcome{Stat: "done"})
		}
		want := []string{"http://a/3", "http://a/5", "http://a/1", "http://a/2", "http://a/6"}
		if len(order) != len(want) {
			t.Fatalf("popped %v; want %v", order, want)
		}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("popped %v; want %v (by priority: 9, 7, then 0 in order)", order, want)
			}
		}
		if sz := e.sizes(t); sz.Queued != 0 {
			t.Errorf("%d counted queued after every URL was popped", sz.Queued)
		}
	})
}

// A seed of a URL fetched already (seen, waiting nowhere) is queued again
// by Requeue itself, counted as a URL queued, and popped once.
func TestRequeueQueuesAgainAURLFetchedAlready(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		ctx := context.Background()
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}})
		finish(t, e.f, pop(t, e.f), frontier.Outcome{Stat: "done"})
		got, err := e.f.Requeue(ctx, []frontier.Item{{URL: "http://a/1", Priority: 3}})
		if err != nil || !slices.Equal(got, []frontier.Requeued{frontier.QueuedAgain}) {
			t.Fatalf("Requeue = %v, %v; want queued again", got, err)
		}
		if sz := e.sizes(t); sz.Queued != 1 {
			t.Fatalf("%d queued; want 1", sz.Queued)
		}
		l := pop(t, e.f)
		if l == nil || l.Item.URL != "http://a/1" || l.Item.Priority != 3 {
			t.Fatalf("popped %+v; want http://a/1 at priority 3", l)
		}
		if again := pop(t, e.f); again != nil {
			t.Fatalf("popped %s too; want one", again.Item.URL)
		}
	})
}

// Requeue against another process's pops, give-backs and finishes of the
// same host, and script flushes, run at random among Requeue's own reads
// and before its writes (a hook on its client runs them before its
// commands and pipelines): over random schedules no URL is
// ever in the queues and the leases at once, or twice in either, and a
// URL not finished is queued or leased. Reading the leases before the
// lists (a pop in between: the URL in neither, queued again) or writing
// without the lists watched (a give-back in between) breaks it.
func TestRequeueAmongPopsAndGiveBacksQueuesNoURLTwice(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		rapid.Check(t, func(rt *rapid.T) {
			ctx := context.Background()
			s.Client.FlushDB(ctx)
			k := keyspace.KeysFor("rq")
			s.Client.HSet(ctx, k.Config, "scope", "host")
			other, err := frontier.Create(ctx, s.Client, "rq", frontier.Options{Shards: 1, Lease: time.Hour}, dedup.Params{Capacity: 1000, FPRate: 0.001})
			if err != nil {
				rt.Fatal(err)
			}
			n := rapid.IntRange(1, 5).Draw(rt, "urls")
			var items []frontier.Item
			for i := range n {
				items = append(items, frontier.Item{URL: fmt.Sprintf("http://a/%d", i), Priority: rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("priority %d", i))})
			}
			if _, err := other.Enqueue(ctx, items); err != nil {
				rt.Fatal(err)
			}
			var held []*frontier.Lease
			present := map[string]bool{} // queued or leased, as the actions and Requeue left it
			for _, it := range items {
				present[it.URL] = true
			}
			act := func(label string) {
				switch rapid.IntRange(0, 5).Draw(rt, label) {
				case 1, 5: // pop one (the likeliest: what a busy crawl does most)
					x, err := other.Exchange(ctx, nil, nil, 1)
					if err != nil {
						rt.Fatal(err)
					}
					held = append(held, x.Popped...)
				case 2: // give one back to its queue
					if len(held) > 0 {
						i := rapid.IntRange(0, len(held)-1).Draw(rt, label+" which")
						if _, err := other.Exchange(ctx, nil, []*frontier.Lease{held[i]}, 0); err != nil {
							rt.Fatal(err)
						}
						held = slices.Delete(held, i, i+1)
					}
				case 3: // finish one
					if len(held) > 0 {
						i := rapid.IntRange(0, len(held)-1).Draw(rt, label+" which")
						if _, err := other.Exchange(ctx, []frontier.Finished{{Lease: held[i], Outcome: frontier.Outcome{Stat: "done"}}}, nil, 0); err != nil {
							rt.Fatal(err)
						}
						present[held[i].Item.URL] = false
						held = slices.Delete(held, i, i+1)
					}
				case 4: // a restart's empty script cache: move.lua loaded again
					s.Client.ScriptFlush(ctx)
				}
			}
			c := s.NewClient(t)
			reads, left := 0, 0 // left: the actions this round's Requeue may still meet
			c.AddHook(readHook(func(name string) {
				if left > 0 && name != "evalsha" && name != "script" && name != "watch" && name != "unwatch" {
					reads++
					left--
					act(fmt.Sprintf("at read %d", reads))
				}
			}))
			seeder, err := frontier.Open(ctx, c, "rq", frontier.Options{Shards: 1, Instance: other.Instance})
			if err != nil {
				rt.Fatal(err)
			}
			for round := range 3 {
				for i := range rapid.IntRange(0, 4).Draw(rt, fmt.Sprintf("round %d: before", round)) {
					act(fmt.Sprintf("round %d: before %d", round, i))
				}
				var seeds []frontier.Item
				for i := range items {
					if rapid.Bool().Draw(rt, fmt.Sprintf("round %d: seed %d", round, i)) {
						seeds = append(seeds, frontier.Item{URL: items[i].URL, Priority: rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("round %d: seed priority %d", round, i))})
					}
				}
				left = rapid.IntRange(0, 6).Draw(rt, fmt.Sprintf("round %d: actions among its reads", round))
				got, err := seeder.Requeue(ctx, seeds)
				left = 0
				if err != nil {
					rt.Fatal(err)
				}
				for i, r := range got {
					if r == frontier.NotSeen {
						rt.Fatalf("%s: not seen; every URL was queued", seeds[i].URL)
					}
					if r == frontier.QueuedAgain {
						present[seeds[i].URL] = true
					}
				}
				count := queuedOrLeased(ctx, rt, s, k)
				for _, it := range items {
					want := 0
					if present[it.URL] {
						want = 1
					}
					if count[it.URL] != want {
						rt.Fatalf("round %d: %s queued or leased %d times; want %d", round, it.URL, count[it.URL], want)
					}
				}
			}
		})
	})
}

// queuedOrLeased counts each URL of host a in the leases and in its lists
// (levels 0 to 3).
func queuedOrLeased(ctx context.Context, t rapid.TB, s *redistest.Server, k keyspace.Keys) map[string]int {
	count := map[string]int{}
	for _, m := range s.Client.ZRange(ctx, k.Leases, 0, -1).Val() {
		var it frontier.Item
		if parts := strings.SplitN(m, "\n", 3); len(parts) == 3 && json.Unmarshal([]byte(parts[2]), &it) == nil {
			count[it.URL]++
		}
	}
	for _, level := range []string{"", " 1", " 2", " 3"} {
		for _, el := range s.Client.LRange(ctx, k.Queues+"a"+level, 0, -1).Val() {
			switch {
			case el == "" || el[0] == 'P':
			case el[0] == '{':
				var it frontier.Item
				if json.Unmarshal([]byte(el), &it) != nil {
					t.Fatalf("queue element %q", el)
				}
				count[it.URL]++
			default:
				count["http://a"+el[strings.IndexByte(el, ' ')+1:]]++
			}
		}
	}
	return count
}

// readHook calls fn with the name of each command a client sends alone,
// and "pipeline" or "multi" before a pipeline or a transaction's MULTI.
type readHook func(name string)

func (h readHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h readHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h(cmd.Name())
		return next(ctx, cmd)
	}
}

func (h readHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		name := "pipeline"
		if len(cmds) > 0 && cmds[0].Name() == "multi" {
			name = "multi"
		}
		h(name)
		return next(ctx, cmds)
	}
}
