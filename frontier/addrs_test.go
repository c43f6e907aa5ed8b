package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/perhost"
	"github.com/redcrawl/crawler/frontier/rendering"
	"github.com/redcrawl/crawler/internal/redistest"
)

// addrCrawl is a frontier of shards shards over s whose leases' windows
// are read on the server's clock (miniredis's, which the test moves), and
// the clock's mover.
func addrCrawl(t *testing.T, s *redistest.Server, name string, shards int, p frontier.Policy) (*frontier.Frontier, func() time.Time, func(time.Duration)) {
	t.Helper()
	ctx := context.Background()
	clock := time.Now()
	now := func() time.Time { return clock }
	advance := func(d time.Duration) { clock = clock.Add(d); s.Mini.SetTime(clock) }
	if s.Mini == nil {
		now, advance = time.Now, time.Sleep
	} else {
		s.Mini.SetTime(clock)
	}
	for i := range shards {
		s.Client.HSet(ctx, keyspace.KeysForShard(name, i).Config, "scope", "host")
	}
	f, err := frontier.Create(ctx, s.Client, name, frontier.Options{Shards: shards, Lease: time.Hour, Policy: p, Clock: now},
		dedup.Params{Capacity: 10000, FPRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	return f, now, advance
}

// mostInSpan is the most requests that URLs with windows ws ([from,
// until)) can make in any span of w, each request anywhere in its window:
// the count of windows a span meets, greatest just after a window opens
// into it.
func mostInSpan(ws [][2]time.Time, w time.Duration) int {
	most := 0
	for _, a := range ws {
		s := a[0].Add(-w + time.Nanosecond)
		n := 0
		for _, b := range ws {
			if b[0].Before(s.Add(w)) && b[1].After(s) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// popWindows pops from f at random moments (steps up to most apart)
// until all total URLs ended or limit passed, and returns the windows of
// those used, on the frontier's clock. Of the URLs each pop gives, at
// random, some are used (finished as fetched in the next call), some
// make no request (finished with their tokens given back, as robots.txt
// refusals are) and some are given back unused (as a stopping worker's):
// their tokens go back to their hosts' and addresses' buckets, and only
// the used ones' windows count.
func popWindows(t *testing.T, f *frontier.Frontier, now func() time.Time, advance func(time.Duration), total int, most, limit time.Duration, seed uint64) [][2]time.Time {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	var ws [][2]time.Time
	var done []frontier.Finished
	var back []*frontier.Lease
	ended := 0
	for start := now(); ended < total && now().Sub(start) < limit; advance(time.Duration(r.Int64N(int64(most))) + time.Millisecond) {
		x, err := f.Exchange(context.Background(), done, back, 1+r.IntN(20))
		if err != nil {
			t.Fatal(err)
		}
		done, back = nil, nil
		if len(x.Info.Resolve) > 0 {
			t.Fatalf("the pop asks to resolve %v, whose addresses were stored", x.Info.Resolve)
		}
		for _, l := range x.Popped {
			switch r.IntN(4) {
			case 0:
				ended++
				done = append(done, frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: frontier.OutcomeSkipped, Refund: true}})
			case 1:
				back = append(back, l)
			default:
				ended++
				ws = append(ws, [2]time.Time{l.NotBefore, l.Deadline})
				done = append(done, frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: frontier.OutcomeOK, Fetched: true}})
			}
		}
	}
	if ended < total {
		t.Fatalf("seed %d: %d of %d URLs ended in %v", seed, ended, total, limit)
	}
	return ws
}

// Ten hosts that resolve to one address, at --rate 2: with politeness
// per address the windows of the URLs used allow at most 2 + burst
// requests in any second together (each host alone would allow its own
// 2 + burst), with some URLs giving their tokens back, finished without a
// request or given back unused; and every URL still ends, the address's
// tokens shared among its hosts. On one shard, and on three (each host's
// queue and the address's share of slots in the host's shard: addrs.lua's
// grid), for bursts of 1 and 3, twelve random schedules a case on the
// simulated clock; per host, the same pops give ten times more.
func TestHostsOfOneAddressShareItsBucket(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		for _, c := range []struct {
			shards, burst int
			perAddress    bool
		}{{1, 1, true}, {1, 3, true}, {3, 1, true}, {3, 3, true}, {1, 1, false}} {
			runs := 12 // random schedules a case, on the simulated clock
			if s.Mini == nil {
				if c.burst == 3 || !c.perAddress {
					continue // on a real server the clock is waited for: the cases that matter most
				}
				runs = 1
			}
			for run := range runs {
				shareOneAddress(t, s, c.shards, c.burst, c.perAddress, uint64(run))
			}
		}
	})
}

// shareOneAddress is one run of TestHostsOfOneAddressShareItsBucket: ten
// hosts of one address, rate 2, burst burst, over shards shards, pops at
// moments drawn from seed.
func shareOneAddress(t *testing.T, s *redistest.Server, shards, burst int, perAddress bool, seed uint64) {
	t.Helper()
	name := fmt.Sprintf("ip%d-%d-%v-%d", shards, burst, perAddress, seed)
	f, now, advance := addrCrawl(t, s, name, shards, frontier.Policy{HostRate: 2, HostBurst: burst, PerAddress: perAddress})
	var answers []perhost.Address
	each := 2
	if s.Mini == nil {
		each = 1 // ten at once would be ten in a second
	}
	for h := range 10 {
		host := fmt.Sprintf("h%d.test", h)
		if _, err := f.Enqueue(context.Background(), hostURLs(host, each)); err != nil {
			t.Fatal(err)
		}
		answers = append(answers, perhost.Address{Host: host, Addr: "192.0.2.7", TTL: time.Hour})
	}
	if err := f.Hosts.SetAddresses(context.Background(), answers); err != nil {
		t.Fatal(err)
	}
	// Three shards give a shard a third of the rate, and a pop that comes
	// well after a slot misses it: the simulated run may take long.
	limit, most := 120*time.Second, 400*time.Millisecond
	if s.Mini == nil {
		limit, most = 25*time.Second, 150*time.Millisecond
	}
	ws := popWindows(t, f, now, advance, 10*each, most, limit, seed*100+uint64(shards*10+burst))
	got, bound := mostInSpan(ws, time.Second), 2+burst
	if perAddress && got > bound {
		t.Errorf("%s: %d requests could reach the address in one second; want at most %d (rate 2 + burst %d)", name, got, bound, burst)
	}
	if !perAddress && got <= bound {
		t.Errorf("%s: per host, %d requests in one second; the check cannot tell ten buckets from one", name, got)
	}
}

// A pop does not hand out a host whose address it does not know: it asks
// for it (PopInfo.Resolve), and pops it once the answer is stored; hosts
// that are addresses (an IPv4 one with a port, an IPv6 one) need none,
// and share their address's bucket across ports.
func TestAPopAsksForTheAddressesItNeeds(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f, _, _ := addrCrawl(t, s, "resolve", 1, frontier.Policy{HostRate: 1, HostBurst: 1, PerAddress: true})
		for _, h := range []string{"named.test", "127.0.0.1:8001", "127.0.0.1:8002", "[::1]:8003"} {
			if _, err := f.Enqueue(ctx, hostURLs(h, 1)); err != nil {
				t.Fatal(err)
			}
		}
		x, err := f.Exchange(ctx, nil, nil, 10)
		if err != nil {
			t.Fatal(err)
		}
		got := hosts(x.Popped)
		slices.Sort(got)
		// One of the two ports of 127.0.0.1: a burst of 1 is one token.
		if len(got) != 2 || got[0] != "127.0.0.1:8001" && got[0] != "127.0.0.1:8002" || got[1] != "[::1]:8003" ||
			!slices.Equal(x.Info.Resolve, []string{"named.test"}) {
			t.Fatalf("popped %v, asked to resolve %v; want one of 127.0.0.1's ports and [::1], and named.test resolved first", got, x.Info.Resolve)
		}
		if err := f.Hosts.SetAddresses(ctx, []perhost.Address{{Host: "named.test", Addr: "192.0.2.9", TTL: time.Minute}}); err != nil {
			t.Fatal(err)
		}
		if x = popN(t, f, 10); len(x.Popped) != 1 || x.Popped[0].Host != "named.test" || len(x.Info.Resolve) != 0 {
			t.Fatalf("popped %v, asked %v; want named.test, under its stored address", hosts(x.Popped), x.Info.Resolve)
		}
		loads, err := f.Hosts.BusiestAddresses(ctx, 5)
		i := slices.IndexFunc(loads, func(l perhost.AddressLoad) bool { return l.Addr == "192.0.2.9" })
		if err != nil || len(loads) != 3 || loads[0].Tokens != 1 || i < 0 || loads[i].Hosts != 1 || !slices.Equal(loads[i].Named, []string{"named.test"}) {
			t.Fatalf("busiest addresses %+v, %v; want three of a token each, 192.0.2.9 naming its host", loads, err)
		}
	})
}

// A URL given back unused, or finished without a request, returns its
// address's token with its host's: its host's next URL is popped at once
// (at one token an hour), on one shard; and on the three-shard grid (at
// one a second, the clock on one of a.test's shard's slots: miniredis),
// where the slot given back is taken again.
func TestAnUnusedTokenGoesBackToItsAddress(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		for _, shards := range []int{1, 3} {
			if shards > 1 && s.Mini == nil {
				continue // the clock is set to a slot
			}
			ctx := context.Background()
			name := fmt.Sprintf("refund%d", shards)
			rate := 1.0 / 3600
			if shards > 1 {
				rate = 1
			}
			f, now, advance := addrCrawl(t, s, name, shards, frontier.Policy{HostRate: rate, HostBurst: 1, PerAddress: true})
			if shards > 1 { // onto the next second k with k mod 3 the shard of a.test
				k := now().UnixMilli()/1000 + 1
				for int(k%3) != keyspace.ShardOf("a.test", 3) {
					k++
				}
				advance(time.UnixMilli(k * 1000).Sub(now()))
			}
			if _, err := f.Enqueue(ctx, append(hostURLs("a.test", 2), hostURLs("b.test", 1)...)); err != nil {
				t.Fatal(err)
			}
			if err := f.Hosts.SetAddresses(ctx, []perhost.Address{{Host: "a.test", Addr: "192.0.2.5", TTL: time.Hour},
				{Host: "b.test", Addr: "192.0.2.5", TTL: time.Hour}}); err != nil {
				t.Fatal(err)
			}
			first := popN(t, f, 3)
			if len(first.Popped) != 1 || first.Popped[0].Host != "a.test" {
				t.Fatalf("%d shards: popped %v; want one URL of a.test (the longer queue): one server, one token an hour", shards, hosts(first.Popped))
			}
			// Finished without a request (robots.txt said no): its tokens go back.
			x, err := f.Exchange(ctx, []frontier.Finished{{Lease: first.Popped[0], Outcome: frontier.Outcome{Stat: frontier.OutcomeSkipped, Refund: true}}}, nil, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(x.Popped) != 1 || x.Popped[0].Host != "a.test" {
				t.Fatalf("%d shards: after a.test's tokens went back, popped %v; want its next URL at once", shards, hosts(x.Popped))
			}
			// Given back unused: the same.
			again, err := f.Exchange(ctx, nil, x.Popped, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Popped) != 1 || again.Popped[0].Item.URL != x.Popped[0].Item.URL {
				t.Fatalf("%d shards: after %s was given back, popped %v; want it again at once", shards, x.Popped[0].Item.URL, hosts(again.Popped))
			}
		}
	})
}

// What a long crawl stores for its servers stays about the hosts and
// servers it crawls now: each store prunes answers expired a day ago and
// address buckets full again, a few a call.
func TestStoredAnswersAndIdleBucketsArePruned(t *testing.T) {
	s := redistest.Mini(t)
	ctx := context.Background()
	f, _, advance := addrCrawl(t, s, "prune", 1, frontier.Policy{HostRate: 1, HostBurst: 1, PerAddress: true})
	var old []perhost.Address
	for i := range 40 {
		h := fmt.Sprintf("old%d.test", i)
		if _, err := f.Enqueue(ctx, hostURLs(h, 1)); err != nil {
			t.Fatal(err)
		}
		old = append(old, perhost.Address{Host: h, Addr: fmt.Sprintf("192.0.2.%d", i), TTL: time.Minute})
	}
	if err := f.Hosts.SetAddresses(ctx, old); err != nil {
		t.Fatal(err)
	}
	if x := popN(t, f, 40); len(x.Popped) != 40 {
		t.Fatalf("popped %d of the 40 hosts' URLs", len(x.Popped))
	}
	k := keyspace.KeysFor("prune").Queues
	if n := s.Client.HLen(ctx, k+" dns").Val() + s.Client.HLen(ctx, k+" addr").Val(); n != 80 {
		t.Fatalf("%d answers and tats stored; want 40 of each", n)
	}
	advance(25 * time.Hour)
	for i := range 4 { // a few stores, as new hosts come
		if err := f.Hosts.SetAddresses(ctx, []perhost.Address{{Host: fmt.Sprintf("new%d.test", i), Addr: "198.51.100.1", TTL: time.Minute}}); err != nil {
			t.Fatal(err)
		}
	}
	if dns, tats := s.Client.HLen(ctx, k+" dns").Val(), s.Client.HLen(ctx, k+" addr").Val(); dns != 4 || tats != 0 {
		t.Errorf("after a day, %d answers and %d tats left; want the 4 new answers alone", dns, tats)
	}
}

// A grant through the address's bucket halves the host's count of pauses,
// as any grant does (back-offs decay on success).
func TestAGrantUnderAnAddressHalvesThePauses(t *testing.T) {
	s := redistest.Mini(t)
	ctx := context.Background()
	f, _, advance := addrCrawl(t, s, "halve", 1, frontier.Policy{HostRate: 1, HostBurst: 1, PerAddress: true})
	if _, err := f.Enqueue(ctx, hostURLs("a.test", 2)); err != nil {
		t.Fatal(err)
	}
	if err := f.Hosts.SetAddresses(ctx, []perhost.Address{{Host: "a.test", Addr: "192.0.2.3", TTL: 100 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := f.Hosts.Pause(ctx, "a.test", time.Second, "a test"); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := s.Client.HGet(ctx, f.RateKey("a.test"), "pauses").Int()
	advance(time.Hour)
	if x := popN(t, f, 1); len(x.Popped) != 1 {
		t.Fatalf("popped %d after the pauses ended; want a.test's URL", len(x.Popped))
	}
	after, _ := s.Client.HGet(ctx, f.RateKey("a.test"), "pauses").Int()
	if before < 2 || after != before/2 {
		t.Errorf("pauses %d before the grant, %d after; want halved", before, after)
	}
}

// A rendered page's subresource token (TakeToken) takes its host's
// address's token too once the address is known: a pop then finds the
// address spent, for every host of it; a host whose address no pop asked
// for keeps to its own bucket.
func TestATakenTokenTakesItsAddresssToo(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f, _, _ := addrCrawl(t, s, "take", 1, frontier.Policy{HostRate: 1.0 / 3600, HostBurst: 1, PerAddress: true})
		if _, err := f.Enqueue(ctx, hostURLs("b.test", 1)); err != nil {
			t.Fatal(err)
		}
		if err := f.Hosts.SetAddresses(ctx, []perhost.Address{{Host: "a.test", Addr: "192.0.2.4", TTL: time.Hour},
			{Host: "b.test", Addr: "192.0.2.4", TTL: time.Hour}}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Render.TakeToken(ctx, "a.test", time.Second); err != nil {
			t.Fatalf("a.test's first token: %v", err)
		}
		if x := popN(t, f, 1); len(x.Popped) != 0 {
			t.Fatalf("popped %v; want nothing: b.test's server gave its token to a.test's subresource", hosts(x.Popped))
		}
		var no *rendering.NoTokenError
		if _, err := f.Render.TakeToken(ctx, "a.test", time.Second); !errors.As(err, &no) {
			t.Fatalf("a.test's second token: %v; want none within the hour", err)
		}
		if _, err := f.Render.TakeToken(ctx, "third.test", time.Second); err != nil {
			t.Fatalf("a host of no known address: %v; want its own bucket's token", err)
		}
	})
}
