package frontier

import (
	"context"
	"fmt"
	"testing"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
)

// handoutFixture is a one-shard crawl with urls URLs queued, one a host.
func handoutFixture(t *testing.T, s *redistest.Server, urls int) (*Frontier, *shard) {
	t.Helper()
	f := openShards(t, s.Client, "ho", 1, 0)
	enqueueEach(t, f, urls, func(i int) string { return fmt.Sprintf("http://h%d.example/", i) })
	return f, f.fs[0]
}

// enqueueEach queues n URLs in f, the i-th url(i).
func enqueueEach(t fataler, f *Frontier, n int, url func(i int) string) {
	t.Helper()
	items := make([]Item, n)
	for i := range items {
		items[i] = Item{URL: url(i)}
	}
	if _, err := f.Enqueue(context.Background(), items); err != nil {
		t.Fatal(err)
	}
}

// handoutRan is what a handout call wrote: the leases held and the hosts
// still ready.
func handoutRan(t *testing.T, s *redistest.Server, sh *shard) (leases, ready int64) {
	t.Helper()
	ctx := context.Background()
	return s.Client.ZCard(ctx, sh.keys.Leases).Val(), s.Client.ZCard(ctx, sh.keys.Ready).Val()
}

// handout.lua grants nothing, and take.lua takes nothing, and neither
// writes anything, unless Redis holds the count of the process's
// exchanges that their exchange.lua leaves: sent in the same pipeline
// after an exchange.lua that was refused, or that must run again (its
// filter grew, its script was missing), they only say Redis's count. A
// take takes only what its own exchange's handout granted.
func TestTheHandoutWritesNothingUntilItsExchangeIsCounted(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		_, sh := handoutFixture(t, s, 5)
		leases0, ready0 := handoutRan(t, s, sh)
		h, tk := sh.newHandout(3, nil), sh.newTake([]string{"a", "b", "c"}) // expect the count exchange.lua would leave: 1
		for _, c := range []*afterCall{h, tk} {
			res, err := c.s.Run(ctx, s.Client, c.keys, c.args...).Slice()
			if n, refused := handoutRefusal(res); err != nil || !refused || n != 0 {
				t.Fatalf("%s before its exchange counted: %v, %v; want refused with Redis's count, 0", c.name, res, err)
			}
		}
		if leases, ready := handoutRan(t, s, sh); leases != leases0 || ready != ready0 {
			t.Fatalf("a refused handout wrote: %d leases (was %d), %d hosts ready (was %d)", leases, leases0, ready, ready0)
		}
		if n := s.Client.Exists(ctx, sh.keys.GrantsOf(sh.process())).Val(); n != 0 {
			t.Fatalf("a refused handout left a grant")
		}
		if err := s.Client.Set(ctx, sh.keys.Counter(sh.process()), "1", 0).Err(); err != nil { // as exchange.lua counts
			t.Fatal(err)
		}
		// A grant another exchange left (its take never came) is not taken.
		stale := `{"c":0,"hosts":["h0.example"],"counts":[1],"drops":[]}`
		if err := s.Client.Set(ctx, sh.keys.GrantsOf(sh.process()), stale, 0).Err(); err != nil {
			t.Fatal(err)
		}
		res, err := takeScript.Run(ctx, s.Client, tk.keys, tk.args...).Slice()
		if err != nil || len(res) != 1 {
			t.Fatalf("a take of another exchange's grant: %v, %v; want 1 and nothing taken", res, err)
		}
		res, err = handoutScript.Run(ctx, s.Client, h.keys, h.args...).Slice()
		if _, refused := handoutRefusal(res); err != nil || refused || len(res) != 2 {
			t.Fatalf("handout after its exchange counted: %v, %v; want 1 and the object", res, err)
		}
		if leases, _ := handoutRan(t, s, sh); leases != leases0 {
			t.Fatalf("%d leases after the handout; want %d: it grants, the take leases", leases, leases0)
		}
		res, err = takeScript.Run(ctx, s.Client, tk.keys, tk.args...).Slice()
		if err != nil || len(res) != 1+2*3 {
			t.Fatalf("take after its handout: %v, %v; want 1 and three URLs", res, err)
		}
		if leases, _ := handoutRan(t, s, sh); leases != leases0+3 {
			t.Fatalf("%d leases after the take; want %d", leases, leases0+3)
		}
		if res, err = takeScript.Run(ctx, s.Client, tk.keys, tk.args...).Slice(); err != nil || len(res) != 1 {
			t.Fatalf("a take sent twice: %v, %v; want nothing taken the second time", res, err)
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
		p.handout.queue(ctx, pipe) // the handout and the take first: refused, the count not there
		p.take.queue(ctx, pipe)
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
			p.take.queue(ctx, pipe)
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

// fataler is what the helpers below need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(...any)
}

// grantOnly sends p's exchange.lua and handout.lua, not its take, as a
// pipeline cut short after the handout would. The process reads their
// replies when the take comes (finish), or abandon does.
func grantOnly(t fataler, s *redistest.Server, p *part) {
	t.Helper()
	ctx := context.Background()
	if err := loadExchange(ctx, s.Client); err != nil {
		t.Fatal(err)
	}
	pipe := s.Client.Pipeline()
	p.call.Queue(ctx, pipe)
	p.handout.queue(ctx, pipe)
	pipe.Exec(ctx)
}

// abandon reads what p's exchange.lua and handout.lua did, its take never
// sent, and counts the exchange as the process does.
func abandon(t fataler, sh *shard, p *part) {
	t.Helper()
	ctx := context.Background()
	_, tail, err := p.call.Result(ctx)
	if err := sh.counted(tail, err); err != nil {
		t.Fatal(err)
	}
	if _, err := p.handout.result(ctx, sh); err != nil {
		t.Fatal(err)
	}
}

// A handout whose take never came (the pipeline cut short between them)
// strands no URL: the hosts it granted their whole queues stay ready, and
// the next exchange hands their URLs out; the grant left behind is not
// taken by that exchange's take, which takes its own.
func TestAGrantWhoseTakeNeverCameStrandsNoURL(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f, sh := handoutFixture(t, s, 5)
		p := &part{pop: 5}
		if err := sh.prepare(ctx, p); err != nil {
			t.Fatal(err)
		}
		grantOnly(t, s, p)
		abandon(t, sh, p)
		if n := s.Client.ZCard(ctx, sh.keys.Leases).Val(); n != 0 {
			t.Fatalf("%d leases without a take; want 0", n)
		}
		x, err := f.Exchange(ctx, nil, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, l := range x.Popped {
			seen[l.Item.URL] = true
		}
		if len(x.Popped) != 5 || len(seen) != 5 {
			t.Fatalf("the next exchange handed out %d URLs (%d distinct); want the 5 queued, once each", len(x.Popped), len(seen))
		}
		if q, _ := s.Client.HGet(ctx, sh.keys.Stats, "queued").Int(); q != 0 {
			t.Fatalf("%d URLs counted queued after all were handed out; want 0", q)
		}
	})
}

// Two processes' grants between the same page budget's leases: the
// budget is counted again where the URLs are leased (take.lua), so a
// grant that another process's take overtook leases no more than the
// budget leaves room for.
func TestTakesKeepThePageBudgetWhateverRunsBetweenGrantAndTake(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f := openShards(t, s.Client, "bud", 1, 2)
		enqueueEach(t, f, 5, func(i int) string { return fmt.Sprintf("http://h%d.example/", i) })
		g, err := Open(ctx, s.Client, "bud", Options{Shards: 1, Policy: Policy{PageBudget: 2}})
		if err != nil {
			t.Fatal(err)
		}
		var parts []*part
		for _, sh := range []*shard{f.fs[0], g.fs[0]} {
			p := &part{pop: 2}
			if err := sh.prepare(ctx, p); err != nil {
				t.Fatal(err)
			}
			grantOnly(t, s, p) // both granted 2: no lease held yet
			parts = append(parts, p)
		}
		popped := 0
		for i, sh := range []*shard{f.fs[0], g.fs[0]} {
			p := parts[i]
			p.take.cmd = takeScript.Run(ctx, s.Client, p.take.keys, p.take.args...)
			if err := sh.finish(ctx, p, sh.o.now(), sh.o.now()); err != nil {
				t.Fatal(err)
			}
			popped += len(p.x.Popped)
		}
		if leases := s.Client.ZCard(ctx, f.fs[0].keys.Leases).Val(); popped != 2 || leases != 2 {
			t.Fatalf("%d URLs handed out, %d leases, under a budget of 2 pages; want 2", popped, leases)
		}
	})
}

// A back.lua that Redis had not (its script missing where the others
// were loaded) goes again after the pipeline, alone: the handout, which
// ran, does not, so nothing is granted twice (a second grant would be
// left behind, its take long gone); the late URL is kept, and the URLs
// wanted are handed out once, the late one among them.
func TestABackThatGoesAgainGrantsNothingTwice(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f, sh := handoutFixture(t, s, 5)
		x, err := f.Exchange(ctx, nil, nil, 1)
		if err != nil || len(x.Popped) != 1 {
			t.Fatalf("pop: %+v, %v", x, err)
		}
		late := x.Popped[0]
		late.Late = true
		if err := s.Client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"exchange", "handout", "take"} { // not back.lua
			if err := s.Client.ScriptLoad(ctx, lua.Source(name)).Err(); err != nil {
				t.Fatal(err)
			}
		}
		x, err = f.Exchange(ctx, nil, []*Lease{late}, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(x.Again) != 1 || x.Again[0] != late || len(x.Popped) != 2 {
			t.Fatalf("%d kept, %d popped; want the late URL kept and 2 more popped", len(x.Again), len(x.Popped))
		}
		if n := s.Client.Exists(ctx, sh.keys.GrantsOf(sh.process())).Val(); n != 0 {
			t.Fatalf("a grant was left behind: the handout ran twice")
		}
		if n := s.Client.ZCard(ctx, sh.keys.Leases).Val(); n != 3 {
			t.Fatalf("%d leases; want 3", n)
		}
	})
}

// A grant goes on to more hosts in a second round when the first round's
// gave less than their share, and the hosts granted their whole queue in
// the first, which stay ready until the take, take no place among them:
// four hosts of one URL and one of ten, eight URLs wanted, and the second
// round grants the big host's two more (with the four first in the ready
// set's order, they would fill the round and end the grant at six).
func TestAGrantsSecondRoundSkipsTheHostsGrantedWhole(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f := openShards(t, s.Client, "wh", 1, 0)
		enqueueEach(t, f, 4, func(i int) string { return fmt.Sprintf("http://a%d.example/", i) })
		enqueueEach(t, f, 10, func(i int) string { return fmt.Sprintf("http://z.example/%d", i) })
		x, err := f.Exchange(ctx, nil, nil, 8)
		if err != nil {
			t.Fatal(err)
		}
		if len(x.Popped) != 8 {
			t.Fatalf("%d URLs handed out; want the 8 wanted: the 4 single ones and 4 of z's", len(x.Popped))
		}
	})
}

// The tokens of pages that made no request wait between finish.lua and
// back.lua in the process's refunds key, under the exchange's count. A
// back.lua that never came (the pipeline cut short after finish.lua)
// leaves them spent: the next exchange's back.lua, of another count,
// gives back its own lease's token and not those, so that host is asked
// no sooner than its bucket allows (less often, never more).
func TestRefundsWhoseBackNeverCameStaySpent(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		s.Client.HSet(ctx, keyspace.KeysFor("rf").Config, "scope", "host")
		f, err := Create(ctx, s.Client, "rf", Options{Shards: 1, Policy: Policy{HostRate: 1.0 / 3600, HostBurst: 1}}, dedup.Params{Capacity: 1000, FPRate: 0.001})
		if err != nil {
			t.Fatal(err)
		}
		sh := f.fs[0]
		enqueueEach(t, f, 4, func(i int) string { return fmt.Sprintf("http://h%d.example/%d", i%2, i) })
		x, err := f.Exchange(ctx, nil, nil, 2)
		if err != nil || len(x.Popped) != 2 {
			t.Fatalf("pop: %+v, %v; want a URL of each host", x.Popped, err)
		}
		a, b := x.Popped[0], x.Popped[1]
		// a ends without a request; its exchange's back.lua never comes.
		p := prepared(t, s, sh, []Finished{{Lease: a, Outcome: Outcome{Stat: OutcomeSkipped, Refund: true}}})
		if p.giveBack == nil {
			t.Fatal("no back.lua for a page whose token goes back")
		}
		pipe := s.Client.Pipeline()
		p.call.Queue(ctx, pipe)
		p.ends.queue(ctx, pipe)
		pipe.Exec(ctx)
		if _, tail, err := p.call.Result(ctx); sh.counted(tail, err) != nil {
			t.Fatalf("exchange.lua: %v", err)
		}
		if _, err := p.ends.result(ctx, sh); err != nil {
			t.Fatalf("finish.lua: %v", err)
		}
		if s.Client.Exists(ctx, sh.keys.RefundsOf(sh.process())).Val() != 1 {
			t.Fatal("finish.lua left no refunds")
		}
		// b is given back, its token with it: its host is due again, a's not.
		if _, err := f.Exchange(ctx, nil, []*Lease{b}, 0); err != nil {
			t.Fatal(err)
		}
		if s.Client.Exists(ctx, sh.keys.RefundsOf(sh.process())).Val() != 0 {
			t.Fatal("the refunds of an exchange long gone were left")
		}
		x, err = f.Exchange(ctx, nil, nil, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(x.Popped) != 1 || x.Popped[0].Host != b.Host {
			t.Fatalf("popped %d URLs; want only %s's, given back with its token (%s's stays spent)", len(x.Popped), b.Host, a.Host)
		}
	})
}
