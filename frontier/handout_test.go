package frontier

import (
	"context"
	"fmt"
	"testing"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
)

// handoutFixture is a one-shard crawl with urls URLs queued, one a host.
func handoutFixture(t *testing.T, s *redistest.Server, urls int) (*Frontier, *shard) {
	t.Helper()
	f := openShards(t, s.Client, "ho", 1, 0)
	var items []Item
	for i := range urls {
		items = append(items, Item{URL: fmt.Sprintf("http://h%d.example/", i)})
	}
	if _, err := f.Enqueue(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	return f, f.fs[0]
}

// handoutRan is what a handout call wrote: the leases held and the hosts
// still ready.
func handoutRan(t *testing.T, s *redistest.Server, sh *shard) (leases, ready int64) {
	t.Helper()
	ctx := context.Background()
	return s.Client.ZCard(ctx, sh.keys.Leases).Val(), s.Client.ZCard(ctx, sh.keys.Ready).Val()
}

// handout.lua hands out nothing, and writes nothing, unless Redis holds
// the count of the process's exchanges that its exchange.lua leaves: sent
// in the same pipeline after an exchange.lua that was refused, or that
// must run again (its filter grew, its script was missing), it only says
// Redis's count.
func TestTheHandoutWritesNothingUntilItsExchangeIsCounted(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		_, sh := handoutFixture(t, s, 5)
		leases0, ready0 := handoutRan(t, s, sh)
		h := sh.newHandout(nil, 3, []string{"a", "b", "c"}) // expects the count exchange.lua would leave: 1
		res, err := handoutScript.Run(ctx, s.Client, h.keys, h.args...).Slice()
		if n, refused := handoutRefusal(res); err != nil || !refused || n != 0 {
			t.Fatalf("handout before its exchange counted: %v, %v; want refused with Redis's count, 0", res, err)
		}
		if leases, ready := handoutRan(t, s, sh); leases != leases0 || ready != ready0 {
			t.Fatalf("a refused handout wrote: %d leases (was %d), %d hosts ready (was %d)", leases, leases0, ready, ready0)
		}
		if err := s.Client.Set(ctx, sh.keys.Counter(sh.process()), "1", 0).Err(); err != nil { // as exchange.lua counts
			t.Fatal(err)
		}
		res, err = handoutScript.Run(ctx, s.Client, h.keys, h.args...).Slice()
		if _, refused := handoutRefusal(res); err != nil || refused || len(res) != 2+2*3 {
			t.Fatalf("handout after its exchange counted: %v, %v; want 1, the object and three URLs", res, err)
		}
		if leases, _ := handoutRan(t, s, sh); leases != leases0+3 {
			t.Fatalf("%d leases after the handout; want %d", leases, leases0+3)
		}
	})
}

// A handout that ran before its exchange.lua counted (here: queued alone,
// ahead of it; in a crawl, its exchange.lua went again on its own after a
// Bloom retry or a missing script) goes again once exchange.lua has,
// and its URLs are handed out; one that finds another count is refused as
// exchange.lua's guard refuses.
func TestAHandoutRefusedForItsCountGoesAgainOnceCounted(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		_, sh := handoutFixture(t, s, 5)
		p := &part{pop: 3}
		if err := sh.prepare(ctx, p); err != nil {
			t.Fatal(err)
		}
		pipe := s.Client.Pipeline()
		p.handout.queue(ctx, pipe) // the handout first: refused, the count not there
		p.call.Queue(ctx, pipe)
		p.queued = true
		if _, err := pipe.Exec(ctx); err != nil && !p.noScript() {
			t.Logf("pipeline: %v", err) // a refusal is a reply, not an error; a missing script goes again below
		}
		if p.noScript() {
			if err := loadExchange(ctx, s.Client); err != nil {
				t.Fatal(err)
			}
			pipe = s.Client.Pipeline()
			p.handout.queue(ctx, pipe)
			p.call.Queue(ctx, pipe)
			pipe.Exec(ctx)
		}
		if n, refused := handoutRefusal(p.handout.cmd.Val().([]any)); !refused || n != 0 {
			t.Fatalf("the handout ahead of its exchange: %v; want refused with count 0", p.handout.cmd.Val())
		}
		if err := sh.finish(ctx, p, sh.o.now(), sh.o.now()); err != nil {
			t.Fatal(err)
		}
		if len(p.x.Popped) != 3 {
			t.Fatalf("%d URLs handed out after the handout went again; want 3", len(p.x.Popped))
		}
		// Redis's count unlike the process's (Redis lost its writes): refused.
		p = &part{pop: 1}
		if err := sh.prepare(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := sh.c.Set(ctx, sh.keys.Counter(sh.process()), "7", 0).Result(); err != nil {
			t.Fatal(err)
		}
		p.handout.cmd = handoutScript.Run(ctx, s.Client, p.handout.keys, p.handout.args...)
		if _, err := p.handout.result(ctx, sh); err != ErrReplyLost {
			t.Fatalf("a handout finding count 7 where the process holds %d: %v; want ErrReplyLost", sh.exchanges, err)
		}
	})
}

// An exchange whose links are more than one call's batch (MaxBatch) costs
// a round trip a batch, as many as its links need and no more: the
// batches before the last are offered first, and the last goes in the
// pipeline with the handout. Every link is answered new, queued, and
// counted in its page's record.
func TestAnExchangeOfManyLinksCostsARoundTripABatch(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		c := s.NewClient(t)
		f := openShards(t, c, "many", 1, 0)
		if _, err := f.Enqueue(ctx, []Item{{URL: "http://a.example/"}}); err != nil {
			t.Fatal(err)
		}
		x, err := f.Exchange(ctx, nil, nil, 1) // loads the scripts too
		if err != nil || len(x.Popped) != 1 {
			t.Fatalf("pop: %+v, %v", x, err)
		}
		most := f.fs[0].seen.MaxBatch()
		for _, n := range []int{most, most + 1, 2*most + 7} {
			var links []Item
			for i := range n {
				links = append(links, Item{URL: fmt.Sprintf("http://a.example/%d/%d", n, i)})
			}
			trips := redistest.RoundTrips(c)
			x, err = f.Exchange(ctx, []Finished{{Lease: x.Popped[0], Outcome: Outcome{Stat: "ok", Fetched: true, Record: []byte(`{}`), Children: links}}}, nil, 1)
			if err != nil || !x.Held[0] || len(x.Popped) != 1 {
				t.Fatalf("%d links: %+v, %v", n, x, err)
			}
			if got, want := trips.Load(), int64((n+most-1)/most); got != want {
				t.Errorf("%d links (%d a call): %d round trips; want %d", n, most, got, want)
			}
			for i, q := range x.Queued[0] {
				if !q {
					t.Fatalf("%d links: link %d not answered new", n, i)
				}
			}
			r := c.XRevRangeN(ctx, keyspace.KeysFor("many").Results, "+", "-", 1).Val()
			if len(r) != 1 || r[0].Values["new_links"] != fmt.Sprint(n) {
				t.Fatalf("%d links: record %v; want new_links %d", n, r, n)
			}
		}
	})
}
