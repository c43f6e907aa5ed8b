package frontier_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

type env struct {
	f     *frontier.Frontier
	s     *redistest.Server
	clock time.Time
	lock  string
	epoch int64
}

func setup(t *testing.T, s *redistest.Server) *env {
	ctx := context.Background()
	// The crawl exists while its config does (admin.Seed writes it).
	s.Client.HSet(ctx, keyspace.KeysFor("t").Config, "scope", "host")
	f, err := frontier.Create(ctx, s.Client, "t", frontier.Options{Shards: 1, Lease: 200 * time.Millisecond, Policy: frontier.Policy{PageBudget: 1000}},
		dedup.Params{Capacity: 1000, FPRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{f: f, s: s, lock: keyspace.LeaderKey("t")}
	if s.Mini != nil {
		e.clock = time.Now()
		s.Mini.SetTime(e.clock)
	}
	l, err := leader.Obtain(ctx, s.Client, e.lock, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e.epoch = l.Epoch()
	return e
}

// advance lets d pass on the server's clock: miniredis's TIME is set, a
// real server's clock is waited for (the lease logic reads only TIME).
func (e *env) advance(d time.Duration) {
	if e.s.Mini != nil {
		e.clock = e.clock.Add(d)
		e.s.Mini.SetTime(e.clock)
		return
	}
	time.Sleep(d)
}

// enqueue queues items and fails the test on an error.
func (e *env) enqueue(t *testing.T, items []frontier.Item) {
	t.Helper()
	if _, err := e.f.Enqueue(context.Background(), items); err != nil {
		t.Fatal(err)
	}
}

// sweep runs the scheduler's sweep under the test's leadership.
func (e *env) sweep(t *testing.T, maxAttempts int, budget int64) frontier.Sweep {
	t.Helper()
	sw, err := e.f.Schedule(context.Background(), leader.EpochKey(e.lock), e.epoch, maxAttempts, 100, budget)
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

// exchange makes an exchange and fails the test on an error.
func (e *env) exchange(t *testing.T, done []frontier.Finished, back []*frontier.Lease, want int) frontier.Exchanged {
	t.Helper()
	x, err := e.f.Exchange(context.Background(), done, back, want)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func (e *env) sizes(t *testing.T) frontier.Sizes {
	sz, err := e.f.Sizes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sz
}

func TestEnqueueDedupsAtomicallyAndPopsInOrder(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		q, err := e.f.Enqueue(ctx, []frontier.Item{{URL: "http://a/"}, {URL: "http://b/", Depth: 1}, {URL: "http://a/"}})
		if err != nil || len(q) != 3 || !q[0] || !q[1] || q[2] {
			t.Fatalf("Enqueue = %v, %v", q, err)
		}
		q, err = e.f.Enqueue(ctx, []frontier.Item{{URL: "http://b/"}, {URL: "http://c/"}})
		if err != nil || q[0] || !q[1] {
			t.Fatalf("second Enqueue = %v", q)
		}
		for _, want := range []string{"http://a/", "http://b/", "http://c/"} {
			l := pop(t, e.f)
			if l == nil || l.Item.URL != want {
				t.Fatalf("pop = %+v; want %s", l, want)
			}
			if sz := e.sizes(t); sz.InFlight != 1 {
				t.Fatalf("popped item not in flight: %+v", sz)
			}
			if held, _ := finish(t, e.f, l, frontier.Outcome{Stat: "done"}); !held {
				t.Fatal("a lease just popped is not held")
			}
		}
		if l := pop(t, e.f); l != nil {
			t.Fatalf("pop on empty = %+v", l)
		}
		if sz := e.sizes(t); !sz.Empty() {
			t.Fatalf("not empty after acks: %+v", sz)
		}
		if n := s.Client.HGet(ctx, "crawl:{t}:stats", "done").Val(); n != "3" {
			t.Fatalf("done = %s", n)
		}
	})
}

// A worker that pops and dies (no ack, no heartbeat) loses nothing: the
// leader's sweep puts the item back once the lease runs out.
func TestExpiredLeaseIsReclaimedThenFails(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}})
		dead := pop(t, e.f)
		if sw := e.sweep(t, 2, 0); sw.Reclaimed != 0 {
			t.Fatalf("reclaimed a live lease: %+v", sw)
		}
		e.advance(300 * time.Millisecond)
		sw, err := e.f.Schedule(ctx, leader.EpochKey(e.lock), e.epoch, 2, 100, 0)
		if err != nil || sw.Reclaimed != 1 {
			t.Fatalf("sweep = %+v, %v; want 1 reclaimed", sw, err)
		}
		if held, _ := finish(t, e.f, dead, frontier.Outcome{Stat: "done"}); held {
			t.Fatal("a reclaimed lease was finished as if still held")
		}
		again := pop(t, e.f)
		if again == nil || again.Item.URL != "http://a/" || again.Item.Attempts != 1 || len(again.Item.Errors) != 1 || !strings.HasPrefix(again.Item.Errors[0], "lease expired") {
			t.Fatalf("reclaimed item = %+v", again)
		}
		e.advance(300 * time.Millisecond)
		sw = e.sweep(t, 2, 0)
		if sw.Failed != 1 {
			t.Fatalf("second expiry: %+v, want failed at max attempts", sw)
		}
		sz := e.sizes(t)
		if !sz.Empty() || sz.Failed != 1 {
			t.Fatalf("sizes %+v", sz)
		}
		if v := s.Client.LIndex(ctx, "crawl:{t}:failed", 0).Val(); v == "" {
			t.Fatal("failed list empty")
		}
	})
}

func TestHeartbeatKeepsLeases(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}})
		l := pop(t, e.f)
		if left := l.Left(); left <= 0 || left > e.f.Lease {
			t.Fatalf("a new lease is surely held for %v; want (0, %v]", left, e.f.Lease)
		}
		e.f.Lease = time.Minute
		gone := &frontier.Lease{ID: "no-such-lease", Host: "a"}
		if n, err := e.f.Registry.Heartbeat(ctx, "w1", 0, []*frontier.Lease{l, gone}); err != nil || n != 1 {
			t.Fatalf("Heartbeat = %d, %v", n, err)
		}
		if l.Left() <= 200*time.Millisecond || gone.Left() > 0 {
			t.Fatalf("after the heartbeat: held lease has %v left, lost one %v; want it extended to about a minute, and 0", l.Left(), gone.Left())
		}
		e.advance(300 * time.Millisecond)
		if sw := e.sweep(t, 3, 0); sw.Reclaimed != 0 {
			t.Fatalf("heartbeated lease reclaimed: %+v", sw)
		}
		if held, _ := finish(t, e.f, l, frontier.Outcome{}); !held {
			t.Fatal("the heartbeated lease was lost")
		}
	})
}

func TestDeferReturnsWhenDue(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://h/a"}, {URL: "http://h/b"}})
		l := pop(t, e.f)
		putBack(t, e.f, l, retryOf(t, l.Item, 250*time.Millisecond))
		if sz := e.sizes(t); sz.Deferred != 1 || sz.InFlight != 0 || sz.Queued != 1 {
			t.Fatalf("after defer %+v", sz)
		}
		if sw := e.sweep(t, 3, 0); sw.Released != 0 {
			t.Fatalf("released early: %+v", sw)
		}
		e.advance(300 * time.Millisecond)
		if sw := e.sweep(t, 3, 0); sw.Released != 1 {
			t.Fatalf("not released when due: %+v", sw)
		}
		// Released items go to the front of their host's queue: a is next, before b.
		if next := pop(t, e.f); next == nil || next.Item.URL != "http://h/a" {
			t.Fatalf("next = %+v", next)
		}
	})
}

func TestStaleLeaderSweepRefused(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}})
		pop(t, e.f)
		e.advance(300 * time.Millisecond)
		s.Client.Del(ctx, e.lock) // the lock expired; a new leader took over
		if _, err := leader.Obtain(ctx, s.Client, e.lock, "new", time.Minute); err != nil {
			t.Fatal(err)
		}
		_, err := e.f.Schedule(ctx, leader.EpochKey(e.lock), e.epoch, 3, 100, 0)
		if !errors.Is(err, fence.ErrFenced) {
			t.Fatalf("stale sweep: %v, want ErrFenced", err)
		}
		if sz := e.sizes(t); sz.InFlight != 1 || sz.Queued != 0 {
			t.Fatalf("stale sweep changed state: %+v", sz)
		}
	})
}

func TestFailedOutcomeMovesToFailedListAtomically(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}})
		l := pop(t, e.f)
		if held, _ := finish(t, e.f, l, frontier.Outcome{Stat: "failed", Failed: "404 Not Found"}); !held {
			t.Fatal("lease not held")
		}
		// The same exchange again, as after a lost reply: answered as
		// recorded, recorded once.
		if held, _ := finish(t, e.f, l, frontier.Outcome{Stat: "failed", Failed: "404 Not Found"}); !held {
			t.Fatal("the same lease ended again: not answered as recorded")
		}
		sz := e.sizes(t)
		if !sz.Empty() || sz.Failed != 1 || s.Client.HGet(ctx, "crawl:{t}:stats", "failed").Val() != "1" {
			t.Fatalf("sizes %+v, failed counted %s; want one failure", sz, s.Client.HGet(ctx, "crawl:{t}:stats", "failed").Val())
		}
		if v := s.Client.LIndex(ctx, "crawl:{t}:failed", 0).Val(); v != `{"u":"http://a/","d":0,"err":"404 Not Found"}` {
			t.Fatalf("failed entry %s", v)
		}
	})
}

// A batch sent again and again (each reply lost, and pages added to it
// meanwhile) is answered as recorded each time and recorded once; a lease
// that lapsed is answered as lost.
func TestAnExchangeSentThriceIsRecordedOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}, {URL: "http://b/1"}, {URL: "http://c/1"}, {URL: "http://d/1"}})
		x := e.exchange(t, nil, nil, 4)
		if len(x.Popped) != 4 {
			t.Fatalf("popped %d of 4", len(x.Popped))
		}
		var batch []frontier.Finished
		for _, l := range x.Popped {
			batch = append(batch, frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: "ok", Fetched: true, Record: []byte(`{"url":"` + l.Item.URL + `"}`)}})
		}
		for send, n := range []int{2, 3, 3} { // the second send carries one page more
			y := e.exchange(t, batch[:n], nil, 0)
			for d, held := range y.Held {
				if !held {
					t.Fatalf("send %d: page %d not held; want every page answered as recorded", send+1, d)
				}
			}
		}
		if n := s.Client.XLen(ctx, "crawl:{t}:results").Val(); n != 3 {
			t.Fatalf("%d records; want 3, each once", n)
		}
		if st := s.Client.HGet(ctx, "crawl:{t}:stats", "ok").Val(); st != "3" {
			t.Fatalf("ok counted %s times; want 3", st)
		}
		// The fourth lease, ended by no exchange, lapses: the sweep takes it back.
		e.advance(300 * time.Millisecond)
		e.sweep(t, 3, 0)
		y := e.exchange(t, batch, nil, 0)
		if !y.Held[0] || !y.Held[2] || y.Held[3] {
			t.Fatalf("held %v; want the batch answered as recorded and the lapsed lease as lost", y.Held)
		}
	})
}

// popInfo asks for one URL the way the crawler does (an exchange that
// wants one); the lease is nil when none is due.
func popInfo(t *testing.T, f *frontier.Frontier) (*frontier.Lease, frontier.PopInfo) {
	t.Helper()
	x, err := f.Exchange(context.Background(), nil, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Popped) == 0 {
		return nil, x.Info
	}
	return x.Popped[0], x.Info
}

func pop(t *testing.T, f *frontier.Frontier) *frontier.Lease {
	t.Helper()
	l, _ := popInfo(t, f)
	return l
}

// finish ends a lease the way the crawler does: an exchange that carries
// its outcome. Held tells whether the lease was still held (and so the
// outcome recorded); Queued, which of its links were new.
func finish(t *testing.T, f *frontier.Frontier, l *frontier.Lease, o frontier.Outcome) (held bool, queued []bool) {
	t.Helper()
	x, err := f.Exchange(context.Background(), []frontier.Finished{{Lease: l, Outcome: o}}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return x.Held[0], x.Queued[0]
}

// putBack ends l with no page, its URL put back as pb says, in an
// exchange; the lease must have been held.
func putBack(t *testing.T, f *frontier.Frontier, l *frontier.Lease, pb *frontier.PutBack) {
	t.Helper()
	if held, _ := finish(t, f, l, frontier.Outcome{PutBack: pb}); !held {
		t.Fatalf("%s: its lease was not held", l.Item.URL)
	}
}

// retryOf is frontier.Retry, failing the test on an error.
func retryOf(t *testing.T, item frontier.Item, after time.Duration) *frontier.PutBack {
	t.Helper()
	pb, err := frontier.Retry(item, after)
	if err != nil {
		t.Fatal(err)
	}
	return pb
}

func TestFinishingQueuesChildrenRecordsAndEndsTheLeaseInOneStep(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}})
		l := pop(t, e.f)
		held, q := finish(t, e.f, l, frontier.Outcome{
			Children: []frontier.Item{{URL: "http://a/", Depth: 1}, {URL: "http://b/", Depth: 1}, {URL: "http://c/", Depth: 1}},
			Stat:     "done", Status: 404, Record: []byte(`{"url":"http://a/"}`), Fetched: true,
		})
		if !held || len(q) != 3 || q[0] || !q[1] || !q[2] {
			t.Fatalf("finish = %v, %v", held, q)
		}
		if sz := e.sizes(t); sz.Queued != 2 || sz.InFlight != 0 {
			t.Fatalf("sizes %+v", sz)
		}
		msgs := s.Client.XRange(ctx, "crawl:{t}:results", "-", "+").Val()
		if len(msgs) != 1 || msgs[0].Values["rec"] != `{"url":"http://a/"}` || msgs[0].Values["new_links"] != "2" {
			t.Fatalf("results %+v", msgs)
		}
		st := s.Client.HGetAll(ctx, "crawl:{t}:stats").Val()
		if st["done"] != "1" || st["status:404"] != "1" || st["pages"] != "1" || st["enqueued"] != "3" || st["records"] != "1" {
			t.Fatalf("stats %v", st)
		}
		_, info := popInfo(t, e.f)
		if info.Pages != 1 || info.CrawlOver {
			t.Fatalf("pop info %+v", info)
		}
		// A finish after the lease was lost queues the children but records nothing.
		l2 := pop(t, e.f)
		e.advance(300 * time.Millisecond)
		if _, err := e.f.Schedule(ctx, leader.EpochKey(e.lock), e.epoch, 5, 100, 0); err != nil {
			t.Fatal(err)
		}
		held, q = finish(t, e.f, l2, frontier.Outcome{Children: []frontier.Item{{URL: "http://d/"}}, Stat: "done", Record: []byte("{}"), Fetched: true})
		if held || !q[0] {
			t.Fatalf("late finish = %v, %v; want the link queued, nothing recorded", held, q)
		}
		if n := s.Client.XLen(ctx, "crawl:{t}:results").Val(); n != 1 {
			t.Fatalf("late finish recorded a result: %d records", n)
		}
	})
}

func TestScheduleDetectsCompletionAndBudget(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}, {URL: "http://b/"}})
		if sw := e.sweep(t, 3, 0); sw.CrawlOver {
			t.Fatal("done with work queued")
		}
		l := pop(t, e.f)
		if sw := e.sweep(t, 3, 1); sw.CrawlOver {
			t.Fatal("done with an item in flight")
		}
		finish(t, e.f, l, frontier.Outcome{Stat: "done", Fetched: true})
		// Budget of one page spent, nothing in flight: done, though b is still queued.
		if sw := e.sweep(t, 3, 1); !sw.CrawlOver {
			t.Fatal("page budget spent but not done")
		}
		if _, info := popInfo(t, e.f); !info.CrawlOver {
			t.Fatal("pop does not report done")
		}
	})
}

// A pop never offers a host before its bucket has a token, and a busy
// host's URLs wait in its own queue instead of churning through pops.
func TestPopIsHostAware(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate = 1
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}, {URL: "http://a/2"}, {URL: "http://a/3"}, {URL: "http://b/1"}})
		first := pop(t, e.f)
		second := pop(t, e.f)
		if first == nil || second == nil || first.Host == second.Host {
			t.Fatalf("two pops gave %+v and %+v; want one URL of each host", first, second)
		}
		l, info := popInfo(t, e.f)
		if l != nil || info.NextDue <= 0 || info.NextDue > time.Second {
			t.Fatalf("third pop = %+v %+v; want nothing due, next host due within 1s", l, info)
		}
		a := first
		if a.Host != "a" {
			a = second
		}
		// Host a turns out busy for 3 s: its URL goes back to the front of a's queue.
		putBack(t, e.f, a, frontier.Requeue(3*time.Second))
		e.advance(1100 * time.Millisecond)
		if l := pop(t, e.f); l != nil && l.Host == "a" {
			t.Fatalf("busy host a offered again after 1.1 s: %+v", l)
		}
		e.advance(2 * time.Second)
		next := pop(t, e.f)
		if next == nil || next.Item.URL != a.Item.URL {
			t.Fatalf("after the wait, pop = %+v; want the requeued %s first", next, a.Item.URL)
		}
		if sz := e.sizes(t); sz.Queued != 2 {
			t.Fatalf("sizes %+v", sz)
		}
	})
}

// One Exchange ends several leases, gives one back, and pops a batch: each
// held page is recorded once with its own new-link count, a lost lease
// records nothing, the returned URL is first in its host's queue again.
func TestExchangeBatchesFinishesReturnsAndPops(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}, {URL: "http://b/1"}, {URL: "http://c/1"}, {URL: "http://d/1"}})
		x, err := e.f.Exchange(ctx, nil, nil, 4)
		if err != nil || len(x.Popped) != 4 {
			t.Fatalf("pop 4 = %+v, %v", x, err)
		}
		hosts := map[string]bool{}
		for _, l := range x.Popped {
			hosts[l.Host] = true
		}
		if len(hosts) != 4 {
			t.Fatalf("popped %+v; want one URL of each host", x.Popped)
		}
		byHost := map[string]*frontier.Lease{}
		for _, l := range x.Popped {
			byHost[l.Host] = l
		}
		// d's lease is lost before the exchange (no heartbeat kept it):
		// its page must not be recorded.
		e.advance(300 * time.Millisecond)
		if _, err := e.f.Registry.Heartbeat(ctx, "w", 0, []*frontier.Lease{byHost["a"], byHost["b"], byHost["c"]}); err != nil {
			t.Fatal(err)
		}
		if sw, err := e.f.Schedule(ctx, leader.EpochKey(e.lock), e.epoch, 5, 100, 0); err != nil || sw.Reclaimed != 1 {
			t.Fatalf("sweep %+v %v; want d's lease reclaimed", sw, err)
		}
		rec := func(u string) []byte { return []byte(`{"url":"` + u + `"}`) }
		done := []frontier.Finished{
			{byHost["a"], frontier.Outcome{Children: []frontier.Item{{URL: "http://a/2"}, {URL: "http://a/3"}}, Stat: "done", Record: rec("a"), Fetched: true}},
			{byHost["d"], frontier.Outcome{Children: []frontier.Item{{URL: "http://d/2"}}, Stat: "done", Record: rec("d"), Fetched: true}},
			{byHost["b"], frontier.Outcome{Children: []frontier.Item{{URL: "http://a/2"}, {URL: "http://b/2"}}, Stat: "error", Record: rec("b"), Failed: "gone", Fetched: true}},
		}
		x, err = e.f.Exchange(ctx, done, []*frontier.Lease{byHost["c"]}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if want := []bool{true, false, true}; fmt.Sprint(x.Held) != fmt.Sprint(want) {
			t.Fatalf("held %v, want %v", x.Held, want)
		}
		if fmt.Sprint(x.Queued) != "[[true true] [true] [false true]]" {
			t.Fatalf("queued %v", x.Queued)
		}
		msgs := s.Client.XRange(ctx, "crawl:{t}:results", "-", "+").Val()
		got := map[string]any{}
		for _, m := range msgs {
			got[m.Values["rec"].(string)] = m.Values["new_links"]
		}
		if len(msgs) != 2 || got[string(rec("a"))] != "2" || got[string(rec("b"))] != "1" {
			t.Fatalf("results %v; want a with 2 new links, b with 1, nothing for the lost d", got)
		}
		st := s.Client.HGetAll(ctx, "crawl:{t}:stats").Val()
		if st["done"] != "1" || st["error"] != "1" || st["pages"] != "2" || st["offered"] != "9" {
			t.Fatalf("stats %v", st)
		}
		if f := s.Client.LRange(ctx, "crawl:{t}:failed", 0, -1).Val(); len(f) != 1 || !strings.Contains(f[0], "gone") {
			t.Fatalf("failed list %v", f)
		}
		if len(x.Popped) != 2 {
			t.Fatalf("popped %+v, want 2", x.Popped)
		}
		// c went back to the front of its queue: popping everything finds it, once.
		var urls []string
		for _, l := range x.Popped {
			urls = append(urls, l.Item.URL)
		}
		for {
			y, err := e.f.Exchange(ctx, nil, nil, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(y.Popped) == 0 {
				break
			}
			for _, l := range y.Popped {
				urls = append(urls, l.Item.URL)
			}
		}
		sort.Strings(urls)
		if want := "[http://a/2 http://a/3 http://b/2 http://c/1 http://d/1 http://d/2]"; fmt.Sprint(urls) != want {
			t.Fatalf("popped %v, want %s", urls, want)
		}
		if sz := e.sizes(t); sz.InFlight != 6 || sz.Queued != 0 {
			t.Fatalf("sizes %+v", sz)
		}
	})
}

// A page with more links than one Bloom batch takes several calls; it is
// still recorded once, with all its new links counted.
func TestExchangeSplitsHugePagesButRecordsOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s) // Bloom capacity 1000: at most 1000 links a call
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}, {URL: "http://b/"}})
		x := e.exchange(t, nil, nil, 2)
		var kids []frontier.Item
		for i := 0; i < 1500; i++ {
			kids = append(kids, frontier.Item{URL: fmt.Sprintf("http://c/%d", i)})
		}
		done := []frontier.Finished{
			{x.Popped[0], frontier.Outcome{Children: kids[:700], Stat: "done", Record: []byte("0"), Fetched: true}},
			{x.Popped[1], frontier.Outcome{Children: kids, Stat: "done", Record: []byte("1"), Fetched: true}},
		}
		y, err := e.f.Exchange(ctx, done, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(y.Queued[1]) != 1500 || y.Queued[1][0] || !y.Queued[1][700] {
			t.Fatalf("queued flags wrong: %d flags", len(y.Queued[1]))
		}
		msgs := s.Client.XRange(ctx, "crawl:{t}:results", "-", "+").Val()
		got := map[any]any{}
		for _, m := range msgs {
			got[m.Values["rec"]] = m.Values["new_links"]
		}
		if len(msgs) != 2 || got["0"] != "700" || got["1"] != "800" {
			t.Fatalf("results %v; want 700 and 800 new links, one record each", got)
		}
		if st := s.Client.HGetAll(ctx, "crawl:{t}:stats").Val(); st["pages"] != "2" || st["enqueued"] != "1502" {
			t.Fatalf("stats %v", st)
		}
	})
}

// With a page budget, pops stop where pages fetched plus URLs in flight
// reach it: the budget holds exactly for the whole crawl.
func TestPopsRespectThePageBudget(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.PageBudget = 3
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}, {URL: "http://a/2"}, {URL: "http://a/3"}, {URL: "http://a/4"}, {URL: "http://a/5"}})
		x, err := e.f.Exchange(ctx, nil, nil, 5)
		if err != nil || len(x.Popped) != 3 {
			t.Fatalf("popped %d (%v); want 3 of 5 under a budget of 3", len(x.Popped), err)
		}
		x2 := e.exchange(t, []frontier.Finished{{x.Popped[0], frontier.Outcome{Stat: "done", Fetched: true}}}, nil, 5)
		if len(x2.Popped) != 0 || x2.Info.Pages != 1 || x2.Info.NextDue >= 0 {
			t.Fatalf("after one page: popped %d, info %+v; want none (1 page + 2 in flight), and a back-off", len(x2.Popped), x2.Info)
		}
		// A URL that ends without a fetch (robots, error) frees its place.
		x3 := e.exchange(t, []frontier.Finished{{x.Popped[1], frontier.Outcome{Stat: "skipped"}}}, nil, 5)
		if len(x3.Popped) != 1 {
			t.Fatalf("after a skip: popped %d; want 1", len(x3.Popped))
		}
	})
}

// A lease whose item cannot be decoded (written by something else, or
// damaged) ends on the failed list; it must not make every sweep fail.
func TestSweepParksUndecodableLeases(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}})
		l := pop(t, e.f)
		s.Client.ZAdd(ctx, "crawl:{t}:leases", redis.Z{Score: 1, Member: "bad\nh\n{not json"})
		e.advance(300 * time.Millisecond)
		sw, err := e.f.Schedule(ctx, leader.EpochKey(e.lock), e.epoch, 3, 100, 0)
		if err != nil || sw.Failed != 1 || sw.Reclaimed != 1 {
			t.Fatalf("sweep = %+v, %v; want the damaged lease failed and %s reclaimed", sw, err, l.Item.URL)
		}
		if f := s.Client.LRange(ctx, "crawl:{t}:failed", 0, -1).Val(); len(f) != 1 || !strings.Contains(f[0], "not json") {
			t.Fatalf("failed list %v", f)
		}
	})
}

// Idle workers wait on the wake channel instead of polling: a message
// comes when the empty queue gets URLs, when an exchange leaves nothing
// queued or held (for the scheduler), and when the crawl is declared done
// — and not for every push.
func TestWakeWhenQueueFillsAndWhenDone(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		sub := s.Client.Subscribe(ctx, keyspace.KeysFor("t").Wake())
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil { // the subscription is in place
			t.Fatal(err)
		}
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}})                                        // empty -> 1: wake
		e.enqueue(t, []frontier.Item{{URL: "http://a/2"}})                                        // not empty: quiet
		x := e.exchange(t, nil, nil, 2)                                                           // empty again
		e.exchange(t, []frontier.Finished{{x.Popped[0], frontier.Outcome{Stat: "done"}}}, nil, 0) // no links: quiet
		l := x.Popped[1]
		e.exchange(t, []frontier.Finished{{l, frontier.Outcome{Stat: "done", Children: []frontier.Item{{URL: "http://b/"}}}}}, nil, 0) // wake
		y := e.exchange(t, nil, nil, 1)
		e.exchange(t, []frontier.Finished{{y.Popped[0], frontier.Outcome{Stat: "done"}}}, nil, 0) // drained
		e.sweep(t, 3, 0)                                                                          // done: wake
		e.sweep(t, 3, 0)                                                                          // already done: quiet
		got := wakesSoFar(t, s, sub)
		if fmt.Sprint(got) != "[1 1 drained done]" {
			t.Fatalf("wake messages %q; want one per empty->queued, one when nothing is left queued or held, one for done", got)
		}
	})
}

// wakesSoFar is the messages sub received on crawl t's wake channel so
// far: it publishes a marker and reads up to it.
func wakesSoFar(t *testing.T, s *redistest.Server, sub *redis.PubSub) []string {
	t.Helper()
	ctx := context.Background()
	s.Client.Publish(ctx, keyspace.KeysFor("t").Wake(), "end-of-test")
	var got []string
	for {
		m, err := sub.ReceiveMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m.Payload == "end-of-test" {
			return got
		}
		got = append(got, m.Payload)
	}
}

// A give-back that leaves nothing held, with the page budget spent (it
// was lowered under the crawl), tells the scheduler the crawl may be over,
// as the exchange that ends the last page does: back.lua, which gives
// leases back, sends "drained".
func TestAGiveBackThatEndsTheBudgetedCrawlWakesTheScheduler(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}, {URL: "http://b/1"}, {URL: "http://c/1"}})
		x := e.exchange(t, nil, nil, 2)
		if len(x.Popped) != 2 {
			t.Fatalf("popped %d; want 2", len(x.Popped))
		}
		e.exchange(t, []frontier.Finished{{x.Popped[0], frontier.Outcome{Stat: "done", Fetched: true}}}, nil, 0)
		p := e.f.PolicyNow()
		p.PageBudget = 1
		e.f.SetPolicy(p)
		sub := s.Client.Subscribe(ctx, keyspace.KeysFor("t").Wake())
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil { // the subscription is in place
			t.Fatal(err)
		}
		e.exchange(t, nil, []*frontier.Lease{x.Popped[1]}, 0)
		got := wakesSoFar(t, s, sub)
		if !slices.Contains(got, "drained") {
			t.Fatalf("wake messages %q after the give-back; want drained", got)
		}
	})
}

// Redis going back in time (a restore from an older snapshot) is noticed
// by the next exchange of a process whose writes it lost: refused before
// any write, then accepted when sent again. A lost reply (Redis ahead of
// the process) is noticed the same way.
func TestExchangeNoticesRollback(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}, {URL: "http://a/2"}})
		x, err := e.f.Exchange(ctx, nil, nil, 1)
		if err != nil || len(x.Popped) != 1 {
			t.Fatalf("pop: %+v, %v", x, err)
		}
		counters := s.Client.Keys(ctx, "crawl:{t}:counter:*").Val()
		if len(counters) != 1 || s.Client.Get(ctx, counters[0]).Val() != "1" {
			t.Fatalf("counter keys %v; want one, holding 1", counters)
		}
		// The restore: Redis forgets this process's exchange.
		s.Client.Del(ctx, counters[0])
		page := []frontier.Finished{{x.Popped[0], frontier.Outcome{Stat: "done", Fetched: true,
			Children: []frontier.Item{{URL: "http://a/new"}}}}}
		before := e.sizes(t)
		if _, err := e.f.Exchange(ctx, page, nil, 1); !errors.Is(err, frontier.ErrRolledBack) {
			t.Fatalf("exchange after the restore: %v; want ErrRolledBack", err)
		}
		if after := e.sizes(t); after != before || s.Client.HGet(ctx, "crawl:{t}:stats", "pages").Val() != "" {
			t.Fatalf("a refused exchange wrote: sizes %+v -> %+v", before, after)
		}
		y, err := e.f.Exchange(ctx, page, nil, 1)
		if err != nil || !y.Held[0] || !y.Queued[0][0] || len(y.Popped) != 1 {
			t.Fatalf("the same exchange again: %+v, %v; want it recorded, its link queued, a pop", y, err)
		}
		// A lost reply: Redis applied an exchange the process never heard of.
		// (An exchange with nothing to end and nothing to pop makes no call:
		// this one asks for a URL.)
		s.Client.Incr(ctx, counters[0])
		if _, err := e.f.Exchange(ctx, nil, nil, 1); !errors.Is(err, frontier.ErrReplyLost) {
			t.Fatalf("Redis ahead of the process: %v; want ErrReplyLost", err)
		}
		if _, err := e.f.Exchange(ctx, nil, nil, 1); err != nil {
			t.Fatal(err)
		}
	})
}

// Once the crawl's config is gone (a reset), no script writes: an
// exchange, a heartbeat and a sweep are refused with ErrGone, so nothing
// of the crawl reappears and no scheduler declares it done.
func TestScriptsRefuseAGoneCrawl(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}})
		x, err := e.f.Exchange(ctx, nil, nil, 1)
		if err != nil || len(x.Popped) != 1 {
			t.Fatal(x, err)
		}
		if _, err := e.f.Registry.Heartbeat(ctx, "w1", 0, x.Popped); err != nil {
			t.Fatal(err)
		}
		if alive, err := e.f.Registry.Workers(ctx); err != nil || len(alive) != 1 || alive[0] != "w1" {
			t.Fatalf("alive workers %v; want w1", alive)
		}
		s.Client.FlushAll(ctx) // reset: every key of the crawl is gone
		page := []frontier.Finished{{x.Popped[0], frontier.Outcome{Stat: "done", Fetched: true, Children: []frontier.Item{{URL: "http://a/2"}}}}}
		if _, err := e.f.Exchange(ctx, page, nil, 1); !errors.Is(err, frontier.ErrGone) {
			t.Errorf("exchange: %v; want ErrGone", err)
		}
		if _, err := e.f.Registry.Heartbeat(ctx, "w1", 0, x.Popped); !errors.Is(err, frontier.ErrGone) {
			t.Errorf("heartbeat: %v; want ErrGone", err)
		}
		// A scheduler that campaigned again after the reset passes the fence.
		l, err := leader.Obtain(ctx, s.Client, e.lock, "test", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.f.Schedule(ctx, leader.EpochKey(e.lock), l.Epoch(), 3, 100, 0); !errors.Is(err, frontier.ErrGone) {
			t.Errorf("sweep: %v; want ErrGone", err)
		}
		s.Client.Del(ctx, e.lock, e.lock+":epoch")
		if keys := s.Client.Keys(ctx, "*").Val(); len(keys) != 0 {
			t.Fatalf("keys written for a gone crawl: %v", keys)
		}
		if err := e.f.Registry.Deregister(ctx, "w1"); err != nil || s.Client.Exists(ctx, keyspace.KeysFor("t").Workers).Val() != 0 {
			t.Fatalf("deregister: %v, or it created the registry", err)
		}
	})
}

// A host that had its cap of pages has its queued URLs dropped, and
// counted, when it comes up for a pop.
func TestHostPageCap(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.HostPageCap = 2
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}, {URL: "http://a/2"}, {URL: "http://a/3"}, {URL: "http://a/4"}, {URL: "http://a/5"}})
		x := e.exchange(t, nil, nil, 2)
		if len(x.Popped) != 2 {
			t.Fatalf("popped %d; want 2", len(x.Popped))
		}
		var done []frontier.Finished
		for _, l := range x.Popped {
			done = append(done, frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: "ok", Fetched: true}})
		}
		// b, queued now, has had no page: the same pop that drops a's URLs
		// hands out b's (each host's count is its own).
		e.enqueue(t, []frontier.Item{{URL: "http://b/1"}, {URL: "http://b/2"}})
		y := e.exchange(t, done, nil, 5)
		if len(y.Popped) != 2 || y.Popped[0].Host != "b" || y.Popped[1].Host != "b" {
			t.Fatalf("popped %v; want b's two URLs, none of a past its cap", hosts(y.Popped))
		}
		st := s.Client.HGetAll(ctx, "crawl:{t}:stats").Val()
		if sz := e.sizes(t); sz.Queued != 0 || sz.InFlight != 2 || st["skipped_links:max_pages_per_host"] != "3" ||
			s.Client.HGet(ctx, keyspace.KeysFor("t").HostPages, "a").Val() != "2" {
			t.Fatalf("sizes %+v, stats %v; want the 3 queued URLs of a dropped and counted", sz, st)
		}
		// a is marked as capped by the exchange that counted its second
		// page; b, below its cap, is not (pops read only the marked).
		if c := s.Client.HGetAll(ctx, keyspace.KeysFor("t").Capped).Val(); len(c) != 1 || c["a"] != "2" {
			t.Fatalf("capped %v; want a with its 2 pages, alone", c)
		}
	})
}

// Hosts.Queues lists the hosts with the most URLs queued, longest first,
// leaves out hosts whose queue is empty, and says when each is due.
func TestHostQueues(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate = 1.0 / 3600
		var items []frontier.Item
		for host, n := range map[string]int{"a": 3, "b": 1, "c": 2, "d": 1} {
			for i := range n {
				items = append(items, frontier.Item{URL: fmt.Sprintf("http://%s/%d", host, i)})
			}
		}
		e.enqueue(t, items)
		// Popping d's only URL leaves its queue empty and due in an hour.
		var popped []string
		for range 4 {
			popped = append(popped, pop(t, e.f).Item.URL)
		}
		top, total, err := e.f.Hosts.Queues(context.Background(), 2)
		if err != nil {
			t.Fatal(err)
		}
		if total != 2 || len(top) != 2 || top[0].Host != "a" || top[0].Queued != 2 || top[1].Host != "c" || top[1].Queued != 1 {
			t.Fatalf("top hosts %+v of %d (after popping %v); want a with 2, c with 1", top, total, popped)
		}
		if top[0].DueIn < 59*time.Minute {
			t.Fatalf("a due in %v; its rate is one an hour", top[0].DueIn)
		}
		all, _, _ := e.f.Hosts.Queues(context.Background(), 10)
		for _, h := range all {
			if h.Host == "d" {
				t.Fatalf("host d listed with an empty queue: %+v", all)
			}
		}
	})
}

// A retry that comes due when the page budget has no room left for it
// stays deferred, and ends with a failed record once the budget is spent;
// it does not go back to the queue, where it would wait unfetched and
// without a record.
func TestDueRetryAfterTheBudgetGetsARecord(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}, {URL: "http://b/"}})
		la, lb := pop(t, e.f), pop(t, e.f)
		retry := la.Item
		retry.Attempts, retry.Errors = 1, []string{"timeout"}
		putBack(t, e.f, la, retryOf(t, retry, 10*time.Millisecond))
		e.advance(50 * time.Millisecond) // the retry is due, while b, in flight, may still take the budget's one page
		if sw := e.sweep(t, 3, 1); sw.Released != 0 || sw.CrawlOver {
			t.Fatalf("sweep %+v; want the retry kept deferred while the budget has no room for it", sw)
		}
		finish(t, e.f, lb, frontier.Outcome{Stat: "ok", Fetched: true}) // the budget's one page
		if sw := e.sweep(t, 3, 1); !sw.CrawlOver {
			t.Fatal("budget spent, nothing in flight, yet not over")
		}
		if sz := e.sizes(t); sz.Queued != 0 || sz.Deferred != 0 {
			t.Fatalf("sizes %+v; want the retry ended, not queued", sz)
		}
		msgs := s.Client.XRange(ctx, "crawl:{t}:results", "-", "+").Val()
		var found bool
		for _, m := range msgs {
			raw, _ := m.Values["rec"].(string)
			var rec frontier.SweptRecord // exactly its fields: package crawl reads them by these names
			dec := json.NewDecoder(strings.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&rec); err != nil {
				t.Fatalf("record %s: %v", raw, err)
			}
			found = found || (rec.URL == "http://a/" && rec.Outcome == frontier.OutcomeFailed && rec.Attempt == 2 &&
				rec.Error == "timeout (not retried: the page budget is spent)")
		}
		if !found {
			t.Fatalf("no failed record for the due retry: %v", msgs)
		}
	})
}

// A URL tried before and back at the front of its host's queue (here a
// lease that expired and was reclaimed) gets its failed record when the
// page budget runs out before a pop took it; a URL never tried stays
// queued as it was, and the done flag comes with the last record.
func TestTriedURLInTheQueueGetsARecordWhenTheBudgetEnds(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.PageBudget, e.f.HostRate = 2, 1.0/3600 // host a is not offered again before the end
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}, {URL: "http://a/2"}, {URL: "http://b/"}, {URL: "http://c/"}})
		la := pop(t, e.f)
		if la == nil || la.Item.URL != "http://a/" {
			t.Fatalf("first pop %+v; want http://a/", la)
		}
		e.advance(300 * time.Millisecond) // past the lease: a worker died holding it
		if sw := e.sweep(t, 3, 2); sw.Reclaimed != 1 {
			t.Fatalf("sweep %+v; want the expired lease reclaimed", sw)
		}
		for _, want := range []string{"http://b/", "http://c/"} {
			l := pop(t, e.f)
			if l == nil || l.Item.URL != want {
				t.Fatalf("pop %+v; want %s (host a waits for its token)", l, want)
			}
			finish(t, e.f, l, frontier.Outcome{Stat: "ok", Fetched: true})
		}
		if sw := e.sweep(t, 3, 2); !sw.CrawlOver {
			t.Fatalf("sweep %+v: budget spent, nothing in flight, yet not over", sw)
		}
		if sz := e.sizes(t); sz.Queued != 1 {
			t.Fatalf("sizes %+v; want only http://a/2, never tried, still queued", sz)
		}
		var found bool
		for _, m := range s.Client.XRange(ctx, "crawl:{t}:results", "-", "+").Val() {
			raw, _ := m.Values["rec"].(string)
			var rec struct{ URL, Error, Outcome string }
			json.Unmarshal([]byte(raw), &rec)
			if rec.URL == "http://a/2" {
				t.Fatalf("a record for a URL never tried: %s", raw)
			}
			found = found || (rec.URL == "http://a/" && rec.Outcome == "failed" &&
				rec.Error == "lease expired (worker died or hung) (not retried: the page budget is spent)")
		}
		if !found {
			t.Fatal("no failed record for the reclaimed URL left in the queue")
		}
	})
}

// A lease ended with no page puts its URL back in the exchange itself:
// a retry to the deferred set, with its attempts; a busy host's URL to
// its queue's front, the host not offered by the very pop of that call.
// Nothing is counted or recorded, and a put-back of a lease Redis no
// longer holds (its URL queued again by the sweep) stores nothing.
func TestAPutBackEndsItsLeaseInTheExchange(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}, {URL: "http://b/1"}, {URL: "http://b/2"}, {URL: "http://c/1"}})
		x := e.exchange(t, nil, nil, 3)
		byHost := map[string]*frontier.Lease{}
		for _, l := range x.Popped {
			byHost[l.Host] = l
		}
		la, lb, lc := byHost["a"], byHost["b"], byHost["c"]
		if la == nil || lb == nil || lc == nil {
			t.Fatalf("popped %d URLs, not one of each host", len(x.Popped))
		}
		retry := la.Item
		retry.Attempts, retry.Errors = 1, []string{"timeout"}
		done := []frontier.Finished{
			{Lease: la, Outcome: frontier.Outcome{PutBack: retryOf(t, retry, time.Hour)}},
			{Lease: lb, Outcome: frontier.Outcome{PutBack: frontier.Requeue(time.Hour)}},
		}
		x = e.exchange(t, done, nil, 10)
		if !x.Held[0] || !x.Held[1] {
			t.Fatalf("held %v; want both", x.Held)
		}
		for _, l := range x.Popped {
			if l.Host != "c" {
				t.Errorf("the pop that requeued b's URL offered %s", l.Item.URL)
			}
		}
		if sz := e.sizes(t); sz.Deferred != 1 || sz.Queued != 2 || sz.InFlight != 1 {
			t.Fatalf("sizes %+v; want a deferred, b's two queued, c in flight", sz)
		}
		deferred := s.Client.ZRange(ctx, keyspace.KeysFor("t").Deferred, 0, -1).Val()
		if len(deferred) != 1 || !strings.Contains(deferred[0], `"timeout"`) {
			t.Fatalf("deferred %q; want a's retry with its error", deferred)
		}
		stats := s.Client.HGetAll(ctx, keyspace.KeysFor("t").Stats).Val()
		if stats["pages"] != "" && stats["pages"] != "0" || s.Client.XLen(ctx, "crawl:{t}:results").Val() != 0 {
			t.Fatalf("a put-back counted or recorded something: stats %v", stats)
		}
		// c's lease lapses and the sweep queues c's URL again: its put-back
		// is refused and stores nothing.
		e.advance(300 * time.Millisecond)
		if sw := e.sweep(t, 3, 0); sw.Reclaimed != 1 {
			t.Fatalf("sweep %+v; want c's lease reclaimed", sw)
		}
		if held, _ := finish(t, e.f, lc, frontier.Outcome{PutBack: frontier.Requeue(time.Hour)}); held {
			t.Fatal("a put-back of a lost lease was taken")
		}
		if sz := e.sizes(t); sz.Queued != 3 || sz.Deferred != 1 {
			t.Fatalf("sizes %+v; want c's URL queued once (by the sweep), a's retry deferred", sz)
		}
	})
}
