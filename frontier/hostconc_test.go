package frontier_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/rapidtest"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
	"pgregory.net/rapid"
)

// A cap of requests in flight to a host (Policy.HostConcurrency, seed
// --host-concurrency), over its range: a cap from 1 to 64, 1 to 1,000
// hosts, three processes exchanging in any order, finishing some of their
// pages and giving some URLs back, and (on miniredis, whose clock the test
// moves) processes killed with their leases: at no step does a host have
// more live leases than the cap; whenever a host has none, the next pop
// that looks at it grants it the cap's worth (or what it has queued): the
// cap is used, not undershot; a killed process's slots are free again once
// its leases lapse; and every URL is leased and finished in the end. With
// politeness per address (hosts that are addresses and ports, several a
// server), no address has more live leases than the cap either.
func TestAHostsRequestsInFlightKeepToItsCap(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		if s.Mini != nil { // an exchange on miniredis under the race detector: about 200 ms
			rapidtest.FewerUnderRace(t, 20)
		}
		rapid.Check(t, func(rt *rapid.T) { hostCapSchedule(rt, s) })
	})
}

func hostCapSchedule(rt *rapid.T, s *redistest.Server) {
	ctx := context.Background()
	s.Client.FlushDB(ctx)
	clock := time.UnixMilli(1_800_000_000_000)
	if s.Mini != nil {
		s.Mini.SetTime(clock)
	}
	capN := rapid.IntRange(1, 64).Draw(rt, "cap")
	// Hosts from 1 to 1,000, log-uniform: most cases small, a few wide.
	// Under the race detector miniredis's exchange costs about 200 ms and
	// a case of a thousand URLs through one address at a cap of 1 takes
	// minutes: there the cases stay small (up to 60 hosts, 40 URLs), and
	// the wide ones are the real server's (and miniredis's without it).
	mostHosts, mostURLs := 1000.0, 120
	if s.Mini != nil && rapidtest.RaceOn {
		mostHosts, mostURLs = 60, 40
	}
	hosts := int(math.Round(math.Pow(mostHosts, rapid.Float64Range(0, 1).Draw(rt, "log hosts"))))
	per := rapid.IntRange(1, max(1, min(8, mostURLs/hosts))).Draw(rt, "URLs a host")
	total := hosts * per
	k := keyspace.KeysFor("hc")
	s.Client.HSet(ctx, k.Config, "scope", "host")
	p := frontier.Policy{HostConcurrency: capN, PerAddress: rapid.Bool().Draw(rt, "per address")}
	addrs := rapid.IntRange(1, hosts).Draw(rt, "addresses")
	// A rate too: none, one a host and address can keep to (100/s), and
	// one so fast the tokens never bind (100,000/s); the cap must hold
	// beside each. (On miniredis, not 100/s: there its exchanges cost
	// three times a plain one's, and the case is the real server's too.)
	rates := []float64{0, 100, 100_000}
	if s.Mini != nil {
		rates = []float64{0, 100_000}
	}
	if p.HostRate = rapid.SampledFrom(rates).Draw(rt, "rate"); p.HostRate > 0 {
		p.HostBurst = 1000
	}
	hostName := func(h int) string { return fmt.Sprintf("h%d.example", h) }
	if p.PerAddress { // host h is port 8000+h of server h mod addrs
		hostName = func(h int) string { return fmt.Sprintf("10.0.%d.%d:%d", h%addrs/250, h%addrs%250, 8000+h) }
	}
	lease := time.Hour // a real server's clock runs: no lease lapses there
	if s.Mini != nil {
		lease = time.Second
	}
	f0, err := frontier.Create(ctx, s.Client, "hc", frontier.Options{Shards: 1, Lease: lease, Policy: p}, dedup.Params{Capacity: 10000, FPRate: 0.001})
	if err != nil {
		rt.Fatal(err)
	}
	procs := []*frontier.Frontier{f0}
	for range 2 {
		f, err := frontier.Open(ctx, s.Client, "hc", frontier.Options{Shards: 1, Lease: lease, Instance: f0.Instance, Policy: p})
		if err != nil {
			rt.Fatal(err)
		}
		procs = append(procs, f)
	}
	items := make([]frontier.Item, 0, total)
	for i := range total {
		items = append(items, frontier.Item{URL: fmt.Sprintf("http://%s/%d", hostName(i%hosts), i/hosts)})
	}
	if _, err := f0.Enqueue(ctx, items); err != nil {
		rt.Fatal(err)
	}
	held := make([][]*frontier.Lease, len(procs))
	finished := map[string]bool{}
	// live counts the leases not lapsed, by host, and fails a host (or,
	// per address, a server) over its cap.
	live := func(when string) map[string]int {
		by, server := map[string]int{}, map[string]int{}
		for _, z := range s.Client.ZRangeWithScores(ctx, k.Leases, 0, -1).Val() {
			if s.Mini != nil && int64(z.Score) <= clock.UnixMilli() {
				continue // lapsed: its worker is gone, and so is its slot
			}
			host := strings.SplitN(z.Member.(string), "\n", 3)[1]
			if by[host]++; by[host] > capN {
				rt.Fatalf("%s: %s has %d leases live; its cap is %d", when, host, by[host], capN)
			}
			if a, _, ok := strings.Cut(host, ":"); ok && p.PerAddress {
				if server[a]++; server[a] > capN {
					rt.Fatalf("%s: server %s has %d leases live; the cap is %d an address too", when, a, server[a], capN)
				}
			}
		}
		return by
	}
	finish := func(w int, n int) []frontier.Finished {
		var done []frontier.Finished
		for _, l := range held[w][:n] {
			done = append(done, frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: "done"}})
			finished[l.Item.URL] = true
		}
		held[w] = held[w][n:]
		return done
	}
	// nextDue is the longest a drain round's exchanges said to wait for a
	// host to be due: what a worker sleeps when it got nothing.
	var nextDue time.Duration
	exchange := func(w int, done []frontier.Finished, back []*frontier.Lease, want int, when string) {
		var n int
		// A host with no lease live before the call, granted less than
		// the cap while it had more queued and the call wanted more:
		// undershot. (Checked where the call could grant every host its
		// cap: want covers all of them.)
		undershoot := want >= min(hosts*capN, total) && len(done) == 0 && len(back) == 0 && !p.PerAddress
		before := live(when + ", before")
		queued := map[string]int{} // hosts with URLs queued whose token is due now
		if undershoot {
			now := s.Client.Time(ctx).Val()
			// A host's tat is its ready score, or the one kept aside
			// while it is parked at its cap (a parked host with nothing
			// in flight must come back, and is checked).
			due := map[string]bool{}
			parked := s.Client.HGetAll(ctx, k.AtCap()).Val()
			for _, z := range s.Client.ZRangeWithScores(ctx, k.Ready, 0, -1).Val() {
				tat := z.Score
				if v, ok := parked[z.Member.(string)]; ok {
					fmt.Sscan(v, &tat)
				}
				due[z.Member.(string)] = tat <= float64(now.UnixMilli())
			}
			for h, v := range s.Client.HGetAll(ctx, k.Lengths).Val() {
				if fmt.Sscan(v, &n); due[h] {
					queued[h] = n
				}
			}
		}
		x, err := procs[w].Exchange(ctx, done, back, want)
		if err != nil {
			rt.Fatal(err)
		}
		got := map[string]int{}
		for _, l := range x.Popped {
			got[l.Host]++
		}
		held[w] = append(held[w], x.Popped...)
		nextDue = max(nextDue, x.Info.NextDue)
		live(when)
		if undershoot {
			for h := range hosts {
				host := hostName(h)
				if before[host] == 0 && got[host] == 0 && queued[host] > 0 {
					rt.Fatalf("%s: %s had no request in flight, URLs queued and a token due, and was granted none", when, host)
				}
			}
		}
	}
	for i := range rapid.IntRange(1, 12).Draw(rt, "steps") {
		w := rapid.IntRange(0, len(procs)-1).Draw(rt, "process")
		when := fmt.Sprintf("step %d, process %d", i, w)
		switch rapid.IntRange(0, 4).Draw(rt, "what") {
		case 0, 1: // finish some pages, pop more
			done := finish(w, rapid.IntRange(0, len(held[w])).Draw(rt, "finished"))
			exchange(w, done, nil, rapid.IntRange(0, min(2*hosts*capN, total+1)).Draw(rt, "want"), when)
		case 2: // give some back unstarted
			n := rapid.IntRange(0, len(held[w])).Draw(rt, "given back")
			back := held[w][:n]
			held[w] = held[w][n:]
			exchange(w, nil, back, 0, when)
		case 3: // killed: its leases lapse, and the sweep reclaims them
			if s.Mini == nil {
				continue
			}
			held[w] = nil
			clock = clock.Add(lease + time.Millisecond)
			s.Mini.SetTime(clock)
			sweepAll(rt, ctx, s, f0)
			live(when + ", after the kill")
		case 4: // time passes, less than a lease: the others' heartbeats keep theirs
			if s.Mini == nil {
				continue
			}
			clock = clock.Add(time.Duration(rapid.IntRange(0, 900).Draw(rt, "ms")) * time.Millisecond)
			s.Mini.SetTime(clock)
			for v := range procs {
				if _, err := procs[v].Registry.Heartbeat(ctx, fmt.Sprintf("w%d", v), 0, held[v]); err != nil {
					rt.Fatal(err)
				}
			}
		}
	}
	// The end: each process finishes what it holds and asks for all; every
	// URL is leased and finished, none twice. On miniredis, whose clock
	// stands still, a round that popped nothing lets time pass as its
	// workers would sleep: until the next host is due (a token not yet
	// come, an address's next one behind its hosts').
	for round := 0; len(finished) < total; round++ {
		if round > 2*total+10 {
			rt.Fatalf("%d of %d URLs finished after %d rounds", len(finished), total, round)
		}
		nextDue = 0
		popped := 0
		for w := range procs {
			exchange(w, finish(w, len(held[w])), nil, min(hosts*capN, total), fmt.Sprintf("drain %d, process %d", round, w))
			popped += len(held[w])
		}
		if popped == 0 && s.Mini != nil && nextDue > 0 {
			clock = clock.Add(nextDue)
			s.Mini.SetTime(clock)
		}
	}
}

// sweepAll runs the scheduler's sweep until it reclaims no more.
func sweepAll(rt *rapid.T, ctx context.Context, s *redistest.Server, f *frontier.Frontier) {
	lock := keyspace.LeaderKey("hc")
	l, err := leader.Obtain(ctx, s.Client, lock, "sweeper", time.Hour)
	if err != nil {
		rt.Fatal(err)
	}
	defer l.Release(ctx)
	for range 100 {
		sw, err := f.Schedule(ctx, leader.EpochKey(lock), l.Epoch(), 100, 1000, 0)
		if err != nil {
			rt.Fatal(err)
		}
		if sw.Reclaimed == 0 {
			return
		}
	}
}

// A host a pop finds with every slot held is parked and counted
// (Sizes.AtCap, what status and the dashboard show); a page of it that
// finishes brings it back at once: the next pop grants its URL, and it is
// counted no more. On both Redis kinds.
func TestAHostAtItsCapIsCountedAndComesBackWhenARequestEnds(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		ctx := context.Background()
		p := e.f.PolicyNow()
		p.HostConcurrency = 1
		e.f.SetPolicy(p)
		e.enqueue(t, []frontier.Item{{URL: "http://a.example/1"}, {URL: "http://a.example/2"}, {URL: "http://b.example/1"}})
		x := e.exchange(t, nil, nil, 10)
		if len(x.Popped) != 2 {
			t.Fatalf("popped %d URLs; want a.example's first and b.example's", len(x.Popped))
		}
		var a *frontier.Lease
		for _, l := range x.Popped {
			if l.Host == "a.example" {
				a = l
			}
		}
		if x2 := e.exchange(t, nil, nil, 10); len(x2.Popped) != 0 {
			t.Fatalf("popped %d more while a.example's one slot was held", len(x2.Popped))
		}
		if sz := e.sizes(t); sz.AtCap != 1 {
			t.Fatalf("%d hosts counted at their cap; want a.example", sz.AtCap)
		}
		x3 := e.exchange(t, []frontier.Finished{{Lease: a, Outcome: frontier.Outcome{Stat: "done"}}}, nil, 10)
		if len(x3.Popped) != 1 || x3.Popped[0].Item.URL != "http://a.example/2" {
			t.Fatalf("after a.example's page finished, popped %v; want its second URL at once", x3.Popped)
		}
		if sz := e.sizes(t); sz.AtCap != 0 {
			t.Fatalf("%d hosts counted at their cap after the release; want none", sz.AtCap)
		}
		if n := s.Client.Exists(ctx, keyspace.KeysFor("t").Slots("b.example")).Val(); n != 1 {
			t.Fatalf("b.example's semaphore is gone while its lease is held")
		}
	})
}

// A slot held by a lease that its heartbeats keep renewing is held for as
// long as they do, however many lease lengths that is (a slow response):
// the host's semaphore does not expire under it. Leases of 300 ms renewed
// for five of them; on a real redis-server, whose clock and key expiries
// run, and on miniredis, whose clock and expiries the test moves.
func TestASlotHeldByARenewedLeaseOutlivesTheLeaseLength(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		const lease = 300 * time.Millisecond
		k := keyspace.KeysFor("long")
		s.Client.HSet(ctx, k.Config, "scope", "host")
		clock := time.Now()
		if s.Mini != nil {
			s.Mini.SetTime(clock)
		}
		f, err := frontier.Create(ctx, s.Client, "long", frontier.Options{Shards: 1, Lease: lease, Policy: frontier.Policy{HostConcurrency: 1}},
			dedup.Params{Capacity: 1000, FPRate: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Enqueue(ctx, []frontier.Item{{URL: "http://slow.example/1"}, {URL: "http://slow.example/2"}}); err != nil {
			t.Fatal(err)
		}
		x, err := f.Exchange(ctx, nil, nil, 2)
		if err != nil || len(x.Popped) != 1 {
			t.Fatalf("popped %d (%v); want the host's one slot's worth", len(x.Popped), err)
		}
		for range 15 { // five leases' time, renewed every third of one
			if s.Mini != nil {
				clock = clock.Add(lease / 3)
				s.Mini.SetTime(clock)
				s.Mini.FastForward(lease / 3)
			} else {
				time.Sleep(lease / 3) // the server's own clock is what is waited for
			}
			if n, err := f.Registry.Heartbeat(ctx, "w1", 0, x.Popped); err != nil || n != 1 {
				t.Fatalf("heartbeat renewed %d (%v); want the lease", n, err)
			}
		}
		if x2, err := f.Exchange(ctx, nil, nil, 2); err != nil || len(x2.Popped) != 0 {
			t.Fatalf("popped %d (%v) while the host's one slot was held by a renewed lease", len(x2.Popped), err)
		}
		x3, err := f.Exchange(ctx, []frontier.Finished{{Lease: x.Popped[0], Outcome: frontier.Outcome{Stat: "done"}}}, nil, 2)
		if err != nil || len(x3.Popped) != 1 {
			t.Fatalf("popped %d (%v) after the page finished; want the second URL", len(x3.Popped), err)
		}
	})
}
