package frontier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// askAgain gives l back as a late URL (its token's window closed) in an
// exchange that pops nothing, and reports whether its host gave it a new
// token (the lease kept, in Again) or took it back.
func askAgain(t *testing.T, f *frontier.Frontier, l *frontier.Lease) bool {
	t.Helper()
	l.Late = true
	x, err := f.Exchange(context.Background(), nil, []*frontier.Lease{l}, 0)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case len(x.Again) == 0:
		return false
	case len(x.Again) == 1 && x.Again[0] == l:
		return true
	}
	t.Fatalf("Again = %v for one lease given back", x.Again)
	return false
}

// A URL that missed its token's window asks its host again: its token
// goes back while it is the host's last, and the host gives it one now if
// a pop would. With a burst of 2 and an hour an interval, a pop takes both
// of a's tokens; the first URL's is not the host's last (the second's came
// after it), so it gets none and goes back to a's queue; the second's is,
// so it gets its own again; and that leaves the host as spent as before:
// no third URL now.
func TestALateURLGetsATokenOnlyWhereAPopWould(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 1.0/3600, 2, 0
		e.enqueue(t, hostURLs("a", 3))
		x := popN(t, e.f, 3)
		if len(x.Popped) != 2 {
			t.Fatalf("popped %d; want a's two tokens' URLs", len(x.Popped))
		}
		first, last := x.Popped[0], x.Popped[1]
		if askAgain(t, e.f, first) {
			t.Fatalf("the first URL was kept; want it back in a's queue: a later token of a was taken after its own")
		}
		if n := queued(t, e.s, "a"); n != 2 {
			t.Errorf("a's queue holds %d URLs; want 2: the third and the first, given back", n)
		}
		if !askAgain(t, e.f, last) {
			t.Fatalf("the last URL was not kept; want a new token: its token was a's last")
		}
		if last.Deadline.Sub(last.NotBefore) < 30*time.Minute {
			t.Errorf("its new window is %v .. %v; want one open half an interval or more", last.NotBefore, last.Deadline)
		}
		if got := popN(t, e.f, 1).Popped; len(got) != 0 {
			t.Errorf("another URL of a popped after the new token; want none: the host's tokens are spent as before")
		}
		if !askAgain(t, e.f, last) {
			t.Errorf("asked again, the last URL was not kept; want it kept: its new token is a's last, and goes back for the same one")
		}
		finish(t, e.f, last, frontier.Outcome{Stat: "ok", Fetched: true})
	})
}

// queued is how many URLs host's queue holds.
func queued(t *testing.T, s *redistest.Server, host string) int64 {
	t.Helper()
	n, err := s.Client.HGet(context.Background(), keyspace.KeysFor("t").Lengths, host).Int64()
	if errors.Is(err, redis.Nil) { // a queue emptied leaves no count
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A paused host, or a paused crawl, has no token for a late URL, which
// goes back to its queue; a lease that ended has no token to ask for, and
// its URL is not queued again by it.
func TestALateURLOfAPausedHostOrCrawlOrALostLeaseGetsNoToken(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 1.0/3600, 1, 0
		e.enqueue(t, append(append(hostURLs("a", 1), hostURLs("b", 1)...), hostURLs("c", 1)...))
		x := popN(t, e.f, 3)
		if len(x.Popped) != 3 {
			t.Fatalf("popped %d; want a's, b's and c's URLs", len(x.Popped))
		}
		by := map[string]*frontier.Lease{}
		for _, l := range x.Popped {
			by[l.Host] = l
		}
		if _, err := e.f.Hosts.Pause(ctx, "a", time.Hour, "a test"); err != nil {
			t.Fatal(err)
		}
		if askAgain(t, e.f, by["a"]) {
			t.Errorf("a paused host's URL was kept; want it back in its queue")
		}
		if n := queued(t, e.s, "a"); n != 1 {
			t.Errorf("a's queue holds %d URLs; want its URL back", n)
		}
		finish(t, e.f, by["b"], frontier.Outcome{Stat: "ok", Fetched: true})
		if askAgain(t, e.f, by["b"]) {
			t.Errorf("an ended lease was kept")
		}
		if n := queued(t, e.s, "b"); n != 0 {
			t.Errorf("b's queue holds %d URLs after its ended lease was given back; want 0", n)
		}
		if _, err := e.f.Control.Pause(ctx, "a test"); err != nil {
			t.Fatal(err)
		}
		if askAgain(t, e.f, by["c"]) {
			t.Errorf("a URL of a paused crawl was kept; want it back in its queue")
		}
	})
}

// Without a limit there is no token to miss, and none to take: a late URL
// (its host's rate lifted since its pop) is kept, with no window.
func TestALateURLOfAHostWithNoLimitIsKept(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 1.0/3600, 1, 0
		e.enqueue(t, hostURLs("a", 1))
		l := pop(t, e.f)
		e.f.HostRate = 0
		if !askAgain(t, e.f, l) || !l.Deadline.IsZero() {
			t.Errorf("kept %v, deadline %v; want it kept, with no deadline", l.Deadline.IsZero(), l.Deadline)
		}
	})
}

// Over shards, each late URL asks its own host's shard, in the exchange's
// one pipeline, and those kept come back together, as leases given back
// and not kept go back to their queues.
func TestLateURLsAskTheirHostsInEveryShard(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		s.Client.HSet(ctx, keyspace.KeysFor("sh").Config, "scope", "host")
		f, err := frontier.Create(ctx, s.Client, "sh", frontier.Options{Shards: 3, Policy: frontier.Policy{HostRate: 1.0 / 3600, HostBurst: 1}},
			dedup.Params{Capacity: 1000, FPRate: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		hosts := []string{"a", "b", "c", "d", "e", "f"}
		var items []frontier.Item
		for _, h := range hosts {
			items = append(items, hostURLs(h, 1)...)
		}
		if _, err := f.Enqueue(ctx, items); err != nil {
			t.Fatal(err)
		}
		var all []*frontier.Lease
		for range 10 {
			x, err := f.Exchange(ctx, nil, nil, len(hosts))
			if err != nil {
				t.Fatal(err)
			}
			if all = append(all, x.Popped...); len(all) == len(hosts) {
				break
			}
		}
		if len(all) != len(hosts) {
			t.Fatalf("popped %d of %d", len(all), len(hosts))
		}
		for _, l := range all {
			l.Late = true
		}
		if _, err := f.Hosts.Pause(ctx, all[0].Host, time.Hour, "a test"); err != nil {
			t.Fatal(err)
		}
		x, err := f.Exchange(ctx, nil, all, 0)
		if err != nil {
			t.Fatal(err)
		}
		kept := map[*frontier.Lease]bool{}
		for _, l := range x.Again {
			kept[l] = true
		}
		for i, l := range all {
			if want := i > 0; kept[l] != want || want && l.Deadline.IsZero() {
				t.Errorf("%s: kept %v (deadline %v); want %v: every host but the paused one gives a new token", l.Host, kept[l], l.Deadline, want)
			}
		}
	})
}
