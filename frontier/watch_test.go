package frontier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/registry"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"
)

// What status and the dashboard read of the hosts and workers: the hosts
// paused and why, each host's bucket now, each worker's last heartbeat.

// Hosts.Paused lists the pauses that have not ended, longest first, with
// why, from the shards' index of pauses; an ended one is left out, and the
// next pause drops it from the index.
func TestPausedHostsSayHowLongAndWhy(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		pauses := keyspace.KeysFor("t").Pauses
		s.Client.ZAdd(ctx, pauses, redis.Z{Score: 1, Member: "ended.example"}) // a pause that ended in 1970
		if _, err := e.f.Hosts.Pause(ctx, "a", time.Hour, "a 429"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.f.Hosts.Pause(ctx, "b", 2*time.Hour, "3 requests in a row failed"); err != nil {
			t.Fatal(err)
		}
		got, err := e.f.Hosts.Paused(ctx)
		if err != nil || len(got) != 2 {
			t.Fatalf("PausedHosts = %+v, %v; want b and a", got, err)
		}
		for i, want := range []struct {
			host, why string
			left      time.Duration
		}{{"b", "3 requests in a row failed", 2 * time.Hour}, {"a", "a 429", time.Hour}} {
			if p := got[i]; p.Host != want.host || p.Why != want.why || p.Left > want.left+time.Second || p.Left < want.left-time.Minute {
				t.Errorf("paused host %d: %+v; want %s for about %v, after %q", i, p, want.host, want.left, want.why)
			}
		}
		if n := s.Client.ZCard(ctx, pauses).Val(); n != 2 {
			t.Errorf("the index of pauses holds %d; want the ended one dropped", n)
		}
	})
}

// The pause Hosts.Paused lists is never longer than the pause set, nor
// shorter by more than the time that passed between the two (Redis's
// clock, to the µs): any Retry-After from a millisecond to a week, read at
// once. (The index kept ends rounded up to the ms, and the reader's now
// rounded down: a pause of 3 s read within its first millisecond said
// 3.001 s.)
func TestAListedPauseIsNeverLongerThanThePause(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		redisNow := func() time.Time { return s.Client.Time(ctx).Val() }
		n := 0
		rapid.Check(t, func(rt *rapid.T) {
			n++
			host := fmt.Sprintf("h%d.example", n) // a host's first pause: its Retry-After, or the first back-off
			retry := time.Duration(rapid.Int64Range(1, 7*24*3600*1000).Draw(rt, "retry ms")) * time.Millisecond
			before := redisNow()
			pause, err := e.f.Hosts.Pause(ctx, host, retry, "a 429")
			if err != nil {
				rt.Fatal(err)
			}
			got, err := e.f.Hosts.Paused(ctx)
			passed := redisNow().Sub(before)
			if err != nil {
				rt.Fatal(err)
			}
			for _, p := range got {
				if p.Host != host {
					continue
				}
				if pause < retry || p.Left > pause || p.Left < pause-passed-time.Microsecond {
					rt.Fatalf("Retry-After %v: paused %v, listed with %v left, %v after", retry, pause, p.Left, passed)
				}
				return
			}
			rt.Fatalf("Retry-After %v: %s not listed (%d listed)", retry, host, len(got))
		})
	})
}

// Hosts.Now reads a host's bucket as the pops would: the tokens it holds
// now, the crawl's rate and burst, or the host's own Crawl-delay where
// that is slower; a host never fetched holds a full bucket.
func TestHostsNowReadsEachHostsBucket(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst = 1.0/3600, 3
		e.enqueue(t, append(hostURLs("a", 5), hostURLs("b", 1)...))
		x := popN(t, e.f, 2)
		if len(x.Popped) != 2 {
			t.Fatalf("popped %v; want 2", hosts(x.Popped))
		}
		var ofA int64
		for _, l := range x.Popped {
			if l.Host == "a" {
				ofA++
			}
		}
		ofB := 2 - ofA
		// A Crawl-delay slower than the crawl's rate sets the host's pace.
		if _, err := e.f.Hosts.SetDelay(ctx, "c", 2*time.Hour, nil); err != nil {
			t.Fatal(err)
		}
		got, err := e.f.Hosts.Now(ctx, []string{"a", "b", "c"})
		if err != nil || len(got) != 3 {
			t.Fatalf("HostsNow = %+v, %v", got, err)
		}
		a, b, c := got[0], got[1], got[2]
		// At a token an hour, a minute refills 1/60 of one.
		if a.Host != "a" || a.Queued != 5-ofA || a.Bucket.Burst != 3 || a.Bucket.Rate != 1.0/3600 ||
			a.Bucket.Tokens < float64(3-ofA) || a.Bucket.Tokens > float64(3-ofA)+1.0/60 {
			t.Errorf("a: %+v; want %d queued and %d tokens of 3 left", a, 5-ofA, 3-ofA)
		}
		if b.Queued != 1-ofB || b.Bucket.Tokens < float64(3-ofB) || b.Bucket.Tokens > float64(3-ofB)+1.0/60 {
			t.Errorf("b: %+v; want %d queued and %d tokens of 3 left", b, 1-ofB, 3-ofB)
		}
		if c.Queued != 0 || c.Why != "crawl-delay" || c.Interval != 2*time.Hour || c.Bucket.Rate != 1.0/7200 || c.Bucket.Burst != 1 || c.Bucket.Tokens != 1 {
			t.Errorf("c: %+v; want its Crawl-delay's pace, a token every 2 h, burst 1, full", c)
		}
	})
}

// A heartbeat leaves the worker's pages and leases for whoever watches;
// the worker's note goes with it when it deregisters, or when the sweep
// forgets it.
func TestWorkersNowSayWhatTheirLastHeartbeatSaid(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		for _, w := range []string{"w1", "w2", "w3"} {
			if _, err := e.f.Registry.Register(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		e.enqueue(t, hostURLs("a", 2))
		x := popN(t, e.f, 2)
		if _, err := e.f.Registry.Heartbeat(ctx, "w1", 7, x.Popped); err != nil {
			t.Fatal(err)
		}
		if _, err := e.f.Registry.Heartbeat(ctx, "w3", 1, nil); err != nil {
			t.Fatal(err)
		}
		got, err := e.f.Registry.WorkersNow(ctx)
		if err != nil || len(got) != 3 {
			t.Fatalf("WorkersNow = %+v, %v; want three", got, err)
		}
		by := map[string]registry.Worker{}
		for _, w := range got {
			by[w.ID] = w
		}
		if w := by["w1"]; !w.Alive || w.Pages != 7 || w.Leases != int64(len(x.Popped)) || w.Beat < 0 || w.Beat > time.Minute {
			t.Errorf("w1: %+v; want alive, 7 pages, %d leases, a heartbeat just now", w, len(x.Popped))
		}
		if w := by["w2"]; !w.Alive || w.Beat != -1 {
			t.Errorf("w2: %+v; want alive, no heartbeat yet", w)
		}
		if err := e.f.Registry.Deregister(ctx, "w1"); err != nil {
			t.Fatal(err)
		}
		info := keyspace.KeysFor("t").WorkerInfo
		if s.Client.HExists(ctx, info, "w1").Val() {
			t.Error("w1's note outlived its deregistration")
		}
		// w3 stopped long ago: the sweep forgets it, and its note.
		s.Client.ZAdd(ctx, keyspace.KeysFor("t").Workers, redis.Z{Score: 1, Member: "w3"})
		e.sweep(t, 3, 0)
		if s.Client.HExists(ctx, info, "w3").Val() {
			t.Error("the sweep forgot w3 but kept its note")
		}
		if got, _ := e.f.Registry.WorkersNow(ctx); len(got) != 1 || got[0].ID != "w2" {
			t.Errorf("WorkersNow = %+v; want only w2", got)
		}
	})
}

// Each host's length (the lengths hash, which status and the dashboard
// read) is the number of URLs in its queue, markers aside, through
// exchanges that queue links, pop, drop past a host's cap and give leases
// back — the exchange writes lengths once, at its end, for all its hosts.
func TestLengthsCountEachHostsQueue(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostPageCap = 4
		var seeds []frontier.Item
		for h := 0; h < 12; h++ {
			for p := 0; p < 3; p++ {
				seeds = append(seeds, frontier.Item{URL: fmt.Sprintf("http://h%d.example/seed/%d", h, p)})
			}
		}
		e.enqueue(t, seeds)
		checkLengths(t, s, "t")
		x := e.exchange(t, nil, nil, 10)
		rounds, given := 0, 0
		for round := 0; round < 12 && len(x.Popped) > 0; round++ {
			rounds++
			var done []frontier.Finished
			var back []*frontier.Lease
			for i, l := range x.Popped {
				if i == len(x.Popped)-1 && round%3 == 1 {
					back = append(back, l) // given back unused
					given++
					continue
				}
				var links []frontier.Item
				for k := 0; k < 3; k++ { // links to its own host and to others
					links = append(links, frontier.Item{URL: fmt.Sprintf("http://h%d.example/r%d/%d/%d", (i+k*5)%12, round, i, k), Depth: 1})
				}
				done = append(done, frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: "ok", Fetched: true, Children: links}})
			}
			x = e.exchange(t, done, back, 10)
			checkLengths(t, s, "t")
		}
		// What the test says it went through, it did.
		dropped, _ := s.Client.HGet(context.Background(), keyspace.KeysFor("t").Stats, "skipped_links:max_pages_per_host").Int64()
		if rounds < 4 || given == 0 || dropped == 0 {
			t.Fatalf("%d rounds of pops, %d leases given back, %d URLs dropped past a host's cap; want 4 or more, and some of each", rounds, given, dropped)
		}
	})
}

// checkLengths compares crawl name's lengths hash with its queues.
func checkLengths(t *testing.T, s *redistest.Server, name string) {
	t.Helper()
	ctx := context.Background()
	k := keyspace.KeysFor(name)
	lengths := s.Client.HGetAll(ctx, k.Lengths).Val()
	queues := s.Client.Keys(ctx, k.Queues+"*").Val() // a test's few keys
	seen := map[string]bool{}
	for _, q := range queues {
		host := q[len(k.Queues):]
		n := 0
		for _, el := range s.Client.LRange(ctx, q, 0, -1).Val() {
			if el[0] != 'P' {
				n++
			}
		}
		seen[host] = true
		if got := lengths[host]; got != fmt.Sprint(n) {
			t.Errorf("host %s: length %q; its queue holds %d URLs", host, got, n)
		}
	}
	for host, n := range lengths {
		if !seen[host] {
			t.Errorf("host %s: length %s, but no queue", host, n)
		}
	}
}
