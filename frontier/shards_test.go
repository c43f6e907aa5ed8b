package frontier

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier/control"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// openShards makes the n shards of crawl name, with budget, as seeding
// does: each with its Bloom filter and its marker, and its share.
func openShards(t *testing.T, c redis.UniversalClient, name string, n int, budget int64) *Frontier {
	t.Helper()
	ctx := context.Background()
	if err := c.HSet(ctx, keyspace.KeysFor(name).Config, "scope", "host").Err(); err != nil {
		t.Fatal(err)
	}
	f, err := Create(ctx, c, name, Options{Shards: n, Policy: Policy{PageBudget: budget}}, dedup.Params{Capacity: 10000 * int64(n), FPRate: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// graphHosts × graphPages pages whose links cross hosts, and so shards:
// each page links to the next page of its host and to the same page two
// hosts on.
const graphHosts, graphPages = 7, 30

func graphURL(h, p int) string { return fmt.Sprintf("http://h%d.example/p%d", h, p) }

// crawlGraph crawls the graph from every host's first page, over the
// shards of sh, as one worker would (the pages of one shard a call), with
// a sweep after every call, until a sweep says the crawl is over. It
// returns how often each URL was popped and how many links the exchanges
// answered new, and fails the test if a sweep calls the crawl over while
// a page is still being worked on.
func crawlGraph(t *testing.T, c redis.UniversalClient, sh *Frontier, budget int64) (map[string]int, int) {
	t.Helper()
	ctx := context.Background()
	clock := time.Unix(1_800_000_000, 0)
	sh.now = func() time.Time { return clock }
	const epochKey = "crawl:{sh}:leader:epoch"
	c.Set(ctx, epochKey, "1", 0)
	for h := 0; h < graphHosts; h++ {
		if _, err := sh.Enqueue(ctx, []Item{{URL: graphURL(h, 0)}}); err != nil {
			t.Fatal(err)
		}
	}
	fetched := map[string]int{}
	var pending []Finished
	newLinks := 0
	for round := 0; round < 3000; round++ {
		var batch, rest []Finished
		for _, f := range pending {
			if len(batch) == 0 || sh.Home(f.Lease) == sh.Home(batch[0].Lease) {
				batch = append(batch, f)
			} else {
				rest = append(rest, f)
			}
		}
		x, err := sh.Exchange(ctx, batch, nil, 5)
		if err != nil {
			t.Fatal(err)
		}
		pending = rest
		for d := range batch {
			if !x.Held[d] {
				t.Fatalf("lease of %s not held", batch[d].Lease.Item.URL)
			}
			for _, q := range x.Queued[d] {
				if q {
					newLinks++
				}
			}
		}
		for _, l := range x.Popped {
			fetched[l.Item.URL]++
			var h, p int
			fmt.Sscanf(l.Item.URL, "http://h%d.example/p%d", &h, &p)
			rec := []byte(`{"url":` + strconv.Quote(l.Item.URL) + `}`)
			parent := graphURL(h, p)
			links := []Item{{URL: graphURL(h, (p+1)%graphPages), Depth: 1, Parent: parent}, {URL: graphURL((h+2)%graphHosts, p), Depth: 1, Parent: parent}}
			pending = append(pending, Finished{Lease: l, Outcome: Outcome{Stat: "ok", Fetched: true, Record: rec, Children: links}})
		}
		inHand := len(pending) + len(x.Popped)
		sw, err := sh.Schedule(ctx, epochKey, 1, 3, 100, budget)
		if err != nil {
			t.Fatal(err)
		}
		if sw.CrawlOver && inHand > 0 {
			t.Fatalf("a sweep called the crawl over with %d pages in hand", inHand)
		}
		if sw.CrawlOver {
			return fetched, newLinks
		}
		if len(x.Popped) == 0 && len(pending) == 0 {
			clock = clock.Add(2 * time.Second) // past every shard's idle time
		}
	}
	t.Fatal("the crawl never ended")
	return nil, 0
}

// A crawl over three shards, of a site whose pages link across hosts
// (and so across shards): every page is popped exactly once, every link's
// new-or-seen answer is right, records count the new links found in other
// shards, and the sweeps call the crawl over only once nothing is left.
func TestShardsCrawlEveryPageOnce(t *testing.T) {
	run := func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		sh := openShards(t, c, "sh", 3, 0)
		fetched, newLinks := crawlGraph(t, c, sh, 0)
		if len(fetched) != graphHosts*graphPages {
			t.Fatalf("%d pages fetched; want %d", len(fetched), graphHosts*graphPages)
		}
		for u, n := range fetched {
			if n != 1 {
				t.Errorf("%s popped %d times", u, n)
			}
		}
		if newLinks != graphHosts*graphPages-graphHosts { // every page but the seeds was new once
			t.Errorf("%d links answered new; want %d", newLinks, graphHosts*graphPages-graphHosts)
		}
		recorded, perShard := 0, []int64{}
		for _, f := range sh.fs {
			msgs := c.XRange(ctx, f.keys.Results, "-", "+").Val()
			perShard = append(perShard, int64(len(msgs)))
			for _, m := range msgs {
				n, _ := strconv.Atoi(fmt.Sprint(m.Values["new_links"]))
				recorded += n
			}
		}
		if recorded != newLinks {
			t.Errorf("records count %d new links; the exchanges said %d", recorded, newLinks)
		}
		for s, n := range perShard {
			if n == 0 {
				t.Errorf("shard %d recorded nothing: %v", s, perShard)
			}
		}
	}
	onEveryRedis(t, run)
}

// A page budget over three shards holds exactly: the shares start even
// (50 each of 150), the hosts are not (the shards hold 1 to 4 of the 7),
// so a shard that runs out of pages gives its unused share to the others,
// and exactly 150 of the 210 pages are fetched, then the crawl is over.
func TestShardsKeepThePageBudgetExactly(t *testing.T) {
	run := func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		const budget = 150
		sh := openShards(t, c, "sh", 3, budget)
		per := map[int]int{}
		for h := 0; h < graphHosts; h++ {
			per[keyspace.ShardOf(fmt.Sprintf("h%d.example", h), 3)]++
		}
		fetched, _ := crawlGraph(t, c, sh, budget)
		if len(fetched) != budget {
			t.Fatalf("%d pages fetched; want the budget, %d (hosts per shard %v)", len(fetched), budget, per)
		}
		var shares, pages int64
		for _, f := range sh.fs {
			a, _ := c.HGet(ctx, f.keys.Stats, "allow").Int64()
			p, _ := c.HGet(ctx, f.keys.Stats, "pages").Int64()
			shares, pages = shares+a, pages+p
		}
		if shares != budget || pages != budget {
			t.Fatalf("shares add up to %d, pages to %d; want both %d (hosts per shard %v)", shares, pages, budget, per)
		}
		t.Logf("hosts per shard %v", per)
	}
	t.Run("miniredis", func(t *testing.T) { run(t, redistest.Mini(t).Client) })
	t.Run("redis-server", func(t *testing.T) { run(t, redistest.Real(t).Client) })
}

// A shard asked only for URLs that lost this process's exchanges (Redis
// went back in time there) refuses; what the rest of the exchange did
// stands — the page is recorded in its own shard — and the caller is told
// to forget what it learned (Forget), as ErrRolledBack would tell it.
func TestShardsForgetWhenAShardPoppedFromLostWrites(t *testing.T) {
	run := func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		sh := openShards(t, c, "fg", 3, 0)
		sh.now = func() time.Time { return time.Unix(1_800_000_000, 0) }
		hostA, hostB := twoShardHosts(3)
		a, b := keyspace.ShardOf(hostA, 3), keyspace.ShardOf(hostB, 3)
		if _, err := sh.Enqueue(ctx, []Item{{URL: "http://" + hostA + "/1"}, {URL: "http://" + hostB + "/1"}}); err != nil {
			t.Fatal(err)
		}
		var leaseA *Lease
		for i := 0; i < 5 && leaseA == nil; i++ { // both shards pop (and count an exchange)
			x, err := sh.Exchange(ctx, nil, nil, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range x.Popped {
				if l.Host == hostA {
					leaseA = l
				}
			}
		}
		if leaseA == nil {
			t.Fatal("never popped the URL of shard A")
		}
		counters := c.Keys(ctx, keyspace.KeysForShard("fg", b).Counters+"*").Val()
		if len(counters) != 1 {
			t.Fatalf("shard B's exchange counters: %v", counters)
		}
		c.Del(ctx, counters[0]) // shard B goes back in time
		if _, err := sh.Enqueue(ctx, []Item{{URL: "http://" + hostB + "/2"}}); err != nil {
			t.Fatal(err)
		}
		for i := range sh.cross.idle { // shard B is the one asked for URLs
			sh.cross.idle[i] = sh.now().Add(time.Hour)
		}
		sh.cross.idle[b] = time.Time{}
		x, err := sh.Exchange(ctx, []Finished{{Lease: leaseA, Outcome: Outcome{Stat: "ok", Fetched: true, Record: []byte(`{}`)}}}, nil, 1)
		if err != nil || !x.Forget || len(x.Held) != 1 || !x.Held[0] {
			t.Fatalf("exchange: %+v, %v; want the page held and Forget", x, err)
		}
		if n := c.XLen(ctx, keyspace.KeysForShard("fg", a).Results).Val(); n != 1 {
			t.Fatalf("shard A recorded %d pages; want 1", n)
		}
		if x, err = sh.Exchange(ctx, nil, nil, 1); err != nil || len(x.Popped) != 1 || x.Popped[0].Host != hostB {
			t.Fatalf("after forgetting, shard B should pop again: %+v, %v", x, err)
		}
	}
	t.Run("miniredis", func(t *testing.T) { run(t, redistest.Mini(t).Client) })
	t.Run("redis-server", func(t *testing.T) { run(t, redistest.Real(t).Client) })
}

// doneOrder checks, after every script call, that the crawl's done flag
// (the first shard's: export --follow and status read that one) is never
// set while a shard still holds a retry that will get its last record.
type doneOrder struct {
	plain     redis.UniversalClient
	done      string
	deferreds []string
	violated  *bool
}

func (h doneOrder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h doneOrder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(ctx)
		return err
	}
}
func (h doneOrder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			h.check(ctx)
		}
		return err
	}
}

func (h doneOrder) check(ctx context.Context) {
	if h.plain.Exists(ctx, h.done).Val() == 1 {
		for _, d := range h.deferreds {
			if h.plain.ZCard(ctx, d).Val() > 0 {
				*h.violated = true
			}
		}
	}
}

// When a sharded crawl's page budget ends, every shard writes its last
// records (a retry that will not be fetched gets a failed one) before the
// crawl's done flag is set: shard 0's flag used to come first, so
// export --follow could return before another shard's last records.
func TestShardedBudgetEndSetsTheDoneFlagLast(t *testing.T) {
	run := func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		const n, budget = 3, 3
		violated := false
		c := s.NewClient(t)
		var deferreds []string
		for i := 0; i < n; i++ {
			deferreds = append(deferreds, keyspace.KeysForShard("ord", i).Deferred)
		}
		c.AddHook(doneOrder{plain: s.Client, done: keyspace.KeysForShard("ord", 0).DoneFlag, deferreds: deferreds, violated: &violated})
		sh := openShards(t, c, "ord", n, budget)
		// A host in each shard; the last shard's host gets a retry.
		hosts := map[int]string{}
		for i := 0; len(hosts) < n; i++ {
			h := fmt.Sprintf("h%d.example", i)
			if _, ok := hosts[keyspace.ShardOf(h, n)]; !ok {
				hosts[keyspace.ShardOf(h, n)] = h
			}
		}
		for sn := 0; sn < n; sn++ {
			items := []Item{{URL: "http://" + hosts[sn] + "/1"}}
			if sn == n-1 {
				items = append(items, Item{URL: "http://" + hosts[sn] + "/2"})
			}
			if _, err := sh.Enqueue(ctx, items); err != nil {
				t.Fatal(err)
			}
		}
		retried := false
		for round := 0; round < 50; round++ {
			x, err := sh.Exchange(ctx, nil, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range x.Popped {
				if l.Host == hosts[n-1] && !retried {
					retry := l.Item
					retry.Attempts, retry.Errors = 1, []string{"timeout"}
					pb, err := Retry(retry, time.Hour)
					if err != nil {
						t.Fatal(err)
					}
					if x, err := sh.Exchange(ctx, []Finished{{Lease: l, Outcome: Outcome{PutBack: pb}}}, nil, 0); err != nil || !x.Held[0] {
						t.Fatalf("the retry's lease held %v, %v", x.Held, err)
					}
					retried = true
					continue
				}
				if _, err := sh.Exchange(ctx, []Finished{{Lease: l, Outcome: Outcome{Stat: "ok", Fetched: true}}}, nil, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		c.Set(ctx, "crawl:{ord}:leader:epoch", "1", 0)
		over := false
		for i := 0; i < 10 && !over; i++ {
			sw, err := sh.Schedule(ctx, "crawl:{ord}:leader:epoch", 1, 3, 100, budget)
			if err != nil {
				t.Fatal(err)
			}
			over = sw.CrawlOver
		}
		if !retried || !over {
			t.Fatalf("retried %v, over %v; want a retry deferred, then the crawl over", retried, over)
		}
		if violated {
			t.Fatal("the crawl's done flag was set while a shard still held a retry without its last record")
		}
		last := keyspace.KeysForShard("ord", keyspace.ShardOf(hosts[n-1], n)).Results
		found := false
		for _, m := range s.Client.XRange(ctx, last, "-", "+").Val() {
			found = found || strings.Contains(fmt.Sprint(m.Values["rec"]), "not retried: the page budget is spent")
		}
		if !found {
			t.Fatal("the retry got no record")
		}
	}
	t.Run("miniredis", func(t *testing.T) { run(t, redistest.Mini(t)) })
	t.Run("redis-server", func(t *testing.T) { run(t, redistest.Real(t)) })
}

// The transactional outbox: a page whose lease ends in its shard while
// the offer of its link to another shard's host fails (that shard lost
// this process's exchanges) is not lost when the worker then dies. Its
// record and link wait in its shard's outbox, which keeps that shard from
// counting as empty; the scheduler's sweep offers the link again once the
// entry is OutboxAge old, and writes the record, its new_links counting
// the link. A worker that lives acks its entries with its next exchange
// instead, and the sweep finds nothing to do.
func TestShardsOutboxDeliversWhatADeadWorkerOffered(t *testing.T) {
	run := func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		sh := openShards(t, c, "ob", 3, 0)
		sh.OutboxAge = time.Millisecond
		hostA, hostB := twoShardHosts(3)
		a, b := keyspace.ShardOf(hostA, 3), keyspace.ShardOf(hostB, 3)
		results := func(s int) []redis.XMessage {
			return c.XRange(ctx, keyspace.KeysForShard("ob", s).Results, "-", "+").Val()
		}
		popA := func(f *Frontier) *Lease {
			for i := 0; i < 5; i++ {
				x, err := f.Exchange(ctx, nil, nil, 1)
				if err != nil {
					t.Fatal(err)
				}
				if len(x.Popped) == 1 && x.Popped[0].Host == hostA {
					return x.Popped[0]
				}
				for _, l := range x.Popped {
					t.Fatalf("popped %s; want only shard A's", l.Item.URL)
				}
			}
			t.Fatal("never popped the URL of shard A")
			return nil
		}
		finish := func(l *Lease, link string) []Finished {
			return []Finished{{Lease: l, Outcome: Outcome{Stat: "ok", Fetched: true, Record: []byte(`{"url":"` + l.Item.URL + `"}`),
				Children: []Item{{URL: link, Depth: 1}}}}}
		}
		if _, err := sh.Enqueue(ctx, []Item{{URL: "http://" + hostA + "/1"}, {URL: "http://" + hostA + "/2"}}); err != nil {
			t.Fatal(err)
		}

		// The worker that lives: its page's record waits for the ack, which
		// its next exchange carries.
		x, err := sh.Exchange(ctx, finish(popA(sh), "http://"+hostB+"/live"), nil, 0)
		if err != nil || !x.Held[0] || !x.Queued[0][0] {
			t.Fatalf("exchange: %+v, %v; want the page held and its link new", x, err)
		}
		if n := len(results(a)); n != 0 {
			t.Fatalf("%d records before the ack; want the page's waiting in the outbox", n)
		}
		if err := sh.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if r := results(a); len(r) != 1 || r[0].Values["new_links"] != "1" {
			t.Fatalf("after the ack, records %v; want the page's, with its one new link", r)
		}
		if n := c.HLen(ctx, keyspace.KeysForShard("ob", a).Outbox).Val(); n != 0 {
			t.Fatalf("%d outbox entries after the ack; want none", n)
		}

		// The worker that dies: shard B refuses its offer (B lost its
		// exchanges), and it is gone before any retry.
		dying, err := Open(ctx, c, "ob", Options{Shards: 3})
		if err != nil {
			t.Fatal(err)
		}
		for i := range dying.cross.idle { // it pops from shard A only
			dying.cross.idle[i] = time.Now().Add(time.Hour)
		}
		dying.cross.idle[a] = time.Time{}
		l := popA(dying)
		dying.fs[b].exchanges += 7 // as if Redis had lost seven of its exchanges in shard B
		x, err = dying.Exchange(ctx, finish(l, "http://"+hostB+"/dead"), nil, 0)
		if err != nil || !x.Held[0] || x.Unasked == nil {
			t.Fatalf("exchange: %+v, %v; want the page held in shard A and shard B's offer refused", x, err)
		}
		queuedB := func() string { return c.HGet(ctx, keyspace.KeysForShard("ob", b).Lengths, hostB).Val() }
		if queuedB() != "1" { // the live worker's link only
			t.Fatal("shard B queued the refused offer's link")
		}
		c.Set(ctx, "crawl:{ob}:leader:epoch", "1", 0)
		sw, err := sh.Schedule(ctx, "crawl:{ob}:leader:epoch", 1, 3, 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		if sw.CrawlOver {
			t.Fatal("the crawl was called over with an outbox entry waiting")
		}
		for i := 0; i < 100 && c.HLen(ctx, keyspace.KeysForShard("ob", a).Outbox).Val() > 0; i++ {
			if _, err := sh.Schedule(ctx, "crawl:{ob}:leader:epoch", 1, 3, 1000, 0); err != nil {
				t.Fatal(err)
			}
		}
		if n := c.HLen(ctx, keyspace.KeysForShard("ob", a).Outbox).Val(); n != 0 {
			t.Fatalf("%d outbox entries after the sweeps; want the dead worker's delivered", n)
		}
		queued := c.LRange(ctx, keyspace.KeysForShard("ob", b).Queue(hostB), 0, -1).Val()
		if queuedB() != "2" || !strings.Contains(fmt.Sprint(queued), "/dead") {
			t.Fatalf("shard B's queue %q (%s URLs); want the dead worker's link with the live one's", queued, queuedB())
		}
		r := results(a)
		if len(r) != 2 || !strings.Contains(fmt.Sprint(r[1].Values["rec"]), "/2") || r[1].Values["new_links"] != "1" {
			t.Fatalf("records %v; want the dead worker's page recorded by the sweep, with its new link", r)
		}
	}
	onEveryRedis(t, run)
}

// A page with more links than one Bloom call takes, to its own shard's
// host and another's: the links beyond a call go first, in calls of their
// own, and every link is queued, answered new once, and counted in the
// page's record.
func TestShardsExchangeMoreLinksThanACall(t *testing.T) {
	run := func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		sh := openShards(t, c, "big", 2, 0)
		hostA, hostB := twoShardHosts(2)
		a := keyspace.ShardOf(hostA, 2)
		if _, err := sh.Enqueue(ctx, []Item{{URL: "http://" + hostA + "/"}}); err != nil {
			t.Fatal(err)
		}
		var x Exchanged
		for i := 0; i < 3 && len(x.Popped) == 0; i++ { // one shard asked a time, in turn
			var err error
			if x, err = sh.Exchange(ctx, nil, nil, 1); err != nil {
				t.Fatal(err)
			}
		}
		if len(x.Popped) != 1 {
			t.Fatalf("pop: %+v", x)
		}
		const n = 1500 // per host: over a call's 1024 in each shard
		var links []Item
		for i := 0; i < n; i++ {
			links = append(links, Item{URL: fmt.Sprintf("http://%s/%d", hostA, i)}, Item{URL: fmt.Sprintf("http://%s/%d", hostB, i)})
		}
		x, err := sh.Exchange(ctx, []Finished{{Lease: x.Popped[0], Outcome: Outcome{Stat: "ok", Fetched: true, Record: []byte(`{}`), Children: links}}}, nil, 0)
		if err != nil || !x.Held[0] {
			t.Fatalf("exchange: %+v, %v", x, err)
		}
		for i, q := range x.Queued[0] {
			if !q {
				t.Fatalf("link %d (%s) not answered new", i, links[i].URL)
			}
		}
		if err := sh.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		r := c.XRange(ctx, keyspace.KeysForShard("big", a).Results, "-", "+").Val()
		if len(r) != 1 || r[0].Values["new_links"] != fmt.Sprint(2*n) {
			t.Fatalf("records %v; want the page's, counting %d new links", r, 2*n)
		}
		sz, err := sh.Sizes(ctx)
		if err != nil || sz.Queued != 2*n {
			t.Fatalf("%+v, %v queued; want %d", sz, err, 2*n)
		}
	}
	t.Run("miniredis", func(t *testing.T) { run(t, redistest.Mini(t).Client) })
	t.Run("redis-server", func(t *testing.T) { run(t, redistest.Real(t).Client) })
}

// twoShardHosts are two hosts in different shards of n.
func twoShardHosts(n int) (string, string) {
	a := "h0.example"
	for i := 1; ; i++ {
		if h := fmt.Sprintf("h%d.example", i); keyspace.ShardOf(h, n) != keyspace.ShardOf(a, n) {
			return a, h
		}
	}
}

// Redis without the scripts (restarted, flushed) costs an exchange and a
// sweep over shards a load and their pipeline again, not a call of its
// own for each shard.
func TestShardsPipelinesSurviveAScriptFlushWhole(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		c := s.NewClient(t)
		trips := redistest.RoundTrips(c)
		const n = 4
		sh := openShards(t, c, "fl", n, 0)
		c.Set(ctx, "crawl:{fl}:leader:epoch", "1", 0)
		var items []Item
		for i := 0; i < 8*n; i++ {
			items = append(items, Item{URL: fmt.Sprintf("http://h%d.example/", i)})
		}
		if _, err := sh.Enqueue(ctx, items); err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"first", "warm", "flushed"} { // the first finds the scripts not loaded yet
			if mode == "flushed" {
				if err := s.Client.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			trips.Store(0)
			x, err := sh.Exchange(ctx, nil, nil, 4*popShare) // asks every shard
			if err != nil || len(x.Popped) == 0 {
				t.Fatalf("%s: exchange %+v, %v", mode, x, err)
			}
			if _, err := sh.Schedule(ctx, "crawl:{fl}:leader:epoch", 1, 3, 100, 0); err != nil {
				t.Fatal(err)
			}
			want := int64(2) // the exchange's pipeline, the sweep's
			if mode != "warm" {
				// and each again after a load, a script a round trip: the
				// exchange's, then the sweep's four (its two scripts behind
				// the leader's fence, and behind the shards' own)
				want = 2 + 1 + 4 + 2
			}
			if got := trips.Load(); got != want {
				t.Errorf("%s: %d round trips; want %d", mode, got, want)
			}
			if _, err := sh.Exchange(ctx, nil, x.Popped, 0); err != nil { // given back for the next round
				t.Fatal(err)
			}
		}
	})
}

// onEveryRedis runs run on miniredis, a redis-server and a 3-master
// redis-cluster: what crosses shards must hold where they are on other
// masters too.
func onEveryRedis(t *testing.T, run func(*testing.T, redis.UniversalClient)) {
	t.Run("miniredis", func(t *testing.T) { run(t, redistest.Mini(t).Client) })
	t.Run("redis-server", func(t *testing.T) { run(t, redistest.Real(t).Client) })
	t.Run("redis-cluster", func(t *testing.T) { run(t, redistest.RealCluster(t, 3).Client) })
}

// Queueing into a crawl that was over reopens it, and with one shard in
// the very call that queues: no failure between two calls can leave URLs
// queued behind a done flag (a worker with --exit-when-done would leave
// them, and a seed sent again with --skip-seen would queue nothing and so
// reopen nothing). With several shards the seeder clears every flag first
// (Reopen, which with one shard makes no call).
func TestQueueingReopensAFinishedCrawl(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		for _, n := range []int{1, 3} {
			name := fmt.Sprintf("reopen%d", n)
			f := openShards(t, s.Client, name, n, 0)
			if _, err := f.Enqueue(ctx, []Item{{URL: "http://early.example/"}}); err != nil { // the scripts loaded
				t.Fatal(err)
			}
			for sh := 0; sh < n; sh++ {
				s.Client.Set(ctx, keyspace.KeysForShard(name, sh).DoneFlag, "1", 0)
			}
			calls := redistest.RoundTrips(s.Client)
			if err := f.Reopen(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := f.Enqueue(ctx, []Item{{URL: "http://late.example/"}}); err != nil {
				t.Fatal(err)
			}
			if n == 1 && calls.Load() != 1 {
				t.Fatalf("one shard: %d calls to queue a URL and reopen; want one", calls.Load())
			}
			if done, err := f.Done(ctx); err != nil || done {
				t.Fatalf("%d shards: Done = %v, %v after a URL was queued; want false", n, done, err)
			}
			for sh := 0; sh < n; sh++ {
				if s.Client.Exists(ctx, keyspace.KeysForShard(name, sh).DoneFlag).Val() != 0 {
					t.Fatalf("%d shards: shard %d still says done with a URL queued", n, sh)
				}
			}
		}
	})
}

// A lease's time left is read on the frontier's clock (Options.Clock), as
// every decision of the frontier is: a test moves it, and no one sleeps.
func TestALeasesTimeIsReadOnTheFrontiersClock(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		clock := time.Now()
		s.Client.HSet(ctx, keyspace.KeysFor("lc").Config, "scope", "host")
		f, err := Create(ctx, s.Client, "lc", Options{Shards: 1, Lease: time.Minute, Clock: func() time.Time { return clock }},
			dedup.Params{Capacity: 1000, FPRate: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Enqueue(ctx, []Item{{URL: "http://h.example/"}}); err != nil {
			t.Fatal(err)
		}
		x, err := f.Exchange(ctx, nil, nil, 1)
		if err != nil || len(x.Popped) != 1 {
			t.Fatalf("pop: %d, %v", len(x.Popped), err)
		}
		l := x.Popped[0]
		if left := l.Left(); left <= 59*time.Second || left > time.Minute {
			t.Fatalf("a fresh lease of a minute has %v left", left)
		}
		clock = clock.Add(time.Minute + time.Millisecond)
		if left := l.Left(); left > 0 {
			t.Fatalf("a minute and a millisecond later by the frontier's clock, the lease has %v left; want none", left)
		}
	})
}

// A budget lowered over three shards ('crawler set --max-pages') holds
// exactly: the change takes back every share's unused part in the step
// that raises the shard's version, a worker on the older settings pops
// nothing, and the scheduler on the new ones shares out the room left;
// of 150, lowered to 20 after 5 pages, exactly 20 pages are fetched.
func TestShardsKeepALoweredBudgetExactly(t *testing.T) {
	run := func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		sh := openShards(t, c, "sh", 3, 150)
		sh.now = func() time.Time { return time.Unix(1_800_000_000, 0) }
		for h := 0; h < graphHosts; h++ {
			if _, err := sh.Enqueue(ctx, []Item{{URL: graphURL(h, 0)}, {URL: graphURL(h, 1)}}); err != nil {
				t.Fatal(err)
			}
		}
		done := 0
		for i := 0; i < 20 && done < 5; i++ {
			x, err := sh.Exchange(ctx, nil, nil, 5-done)
			if err != nil {
				t.Fatal(err)
			}
			var fin []Finished
			for _, l := range x.Popped {
				fin = append(fin, Finished{Lease: l, Outcome: Outcome{Stat: "ok", Fetched: true}})
			}
			for _, f := range fin { // one shard a call
				if _, err := sh.Exchange(ctx, []Finished{f}, nil, 0); err != nil {
					t.Fatal(err)
				}
			}
			done += len(fin)
		}
		if done != 5 {
			t.Fatalf("%d pages before the change; want 5", done)
		}
		if _, err := sh.Control.SetSettings(ctx, 0, map[string]string{"max_pages": "20"}, control.BudgetLowered); err != nil {
			t.Fatal(err)
		}
		var shares int64
		for _, f := range sh.fs {
			a, _ := c.HGet(ctx, f.keys.Stats, "allow").Int64()
			shares += a
		}
		if shares != 5 {
			t.Fatalf("shares add up to %d after the change; want the 5 pages fetched, the rest taken back", shares)
		}
		if x, err := sh.Exchange(ctx, nil, nil, 10); err != nil || len(x.Popped) != 0 || x.Info.Settings != 1 {
			t.Fatalf("on the older settings: popped %d, settings %d, %v; want nothing popped and version 1 said", len(x.Popped), x.Info.Settings, err)
		}
		p := sh.PolicyNow()
		p.PageBudget, p.Version = 20, 1
		sh.SetPolicy(p)
		fetched, _ := crawlGraph(t, c, sh, 20)
		var pages int64
		for _, f := range sh.fs {
			n, _ := c.HGet(ctx, f.keys.Stats, "pages").Int64()
			pages += n
		}
		if pages != 20 || len(fetched) != 15 {
			t.Fatalf("%d pages in all, %d after the change; want 20 and 15", pages, len(fetched))
		}
	}
	t.Run("miniredis", func(t *testing.T) { run(t, redistest.Mini(t).Client) })
	t.Run("redis-server", func(t *testing.T) { run(t, redistest.Real(t).Client) })
}
