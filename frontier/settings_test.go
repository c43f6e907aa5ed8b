package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/control"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A change of the settings is written only if the version read is still
// the one in force, counts the version up, and raises every shard's; an
// exchange that carries an older version pops nothing (and gives a late
// URL back rather than give it a token), but records its pages; its reply
// says the version in force, and once the caller acts on it, it pops.
// With several shards, every shard holds the version.
func TestAnExchangeOnOlderSettingsPopsNothing(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, s *redistest.Server) {
				ctx := context.Background()
				f := sixHosts(t, s, "st", shards)
				held := popSome(t, f, 1)[0]

				if _, err := f.Control.SetSettings(ctx, 3, map[string]string{"rate": "2"}, control.BudgetKept); !errors.Is(err, control.ErrSettingsMoved) {
					t.Fatalf("a change from version 3 of a crawl at 0: %v; want ErrSettingsMoved", err)
				}
				if v := s.Client.HGet(ctx, keyspace.KeysFor("st").Config, "rate").Val(); v != "" {
					t.Fatalf("a refused change wrote rate %q", v)
				}
				v, err := f.Control.SetSettings(ctx, 0, map[string]string{"rate": "2", "burst": "3"}, control.BudgetKept)
				if err != nil || v != 1 {
					t.Fatalf("SetSettings = %d, %v; want version 1", v, err)
				}
				got := s.Client.HMGet(ctx, keyspace.KeysFor("st").Config, "rate", "burst", control.VersionField).Val()
				if fmt.Sprint(got) != "[2 3 1]" {
					t.Fatalf("settings hash: rate, burst, version = %v; want [2 3 1]", got)
				}
				vs, err := f.Control.SettingsVersions(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for i, v := range vs {
					if v != 1 {
						t.Fatalf("shard %d holds version %d; want 1 in each of %v", i, v, vs)
					}
				}

				x, err := f.Exchange(ctx, []frontier.Finished{{Lease: held, Outcome: frontier.Outcome{Stat: "ok", Fetched: true,
					Children: []frontier.Item{{URL: "http://a/new"}}}}}, nil, 12)
				if err != nil {
					t.Fatal(err)
				}
				if len(x.Popped) != 0 || !x.Held[0] || !x.Queued[0][0] || x.Info.Settings != 1 {
					t.Fatalf("on version 0: popped %d, held %v, queued %v, settings %d; want nothing popped, the page recorded, "+
						"its link queued, and version 1 said", len(x.Popped), x.Held, x.Queued, x.Info.Settings)
				}
				p := f.PolicyNow()
				p.Version = 1
				f.SetPolicy(p)
				for _, ch := range f.Wakes() {
					f.Woken(ch)
				}
				if n := len(popSome(t, f, 12)); n != 12 {
					t.Fatalf("on version 1: popped %d; want the 12 queued", n)
				}
				// Spread again with nothing changed: the version stays.
				if v, err := f.Control.SetSettings(ctx, 1, nil, control.BudgetKept); err != nil || v != 1 {
					t.Fatalf("SetSettings with nothing = %d, %v; want version 1 kept", v, err)
				}
			})
		})
	}
}

// popSome pops until n URLs came (over shards, that may take calls), at
// most ten calls.
func popSome(t *testing.T, f *frontier.Frontier, n int) []*frontier.Lease {
	t.Helper()
	var got []*frontier.Lease
	for range 10 {
		x, err := f.Exchange(context.Background(), nil, nil, n-len(got))
		if err != nil {
			t.Fatal(err)
		}
		if got = append(got, x.Popped...); len(got) >= n {
			break
		}
	}
	return got
}

// A late URL given back by a worker on older settings gets no new token:
// it goes back to its queue, as any given back.
func TestALateURLOnOlderSettingsGoesBack(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, hostURLs("a", 2))
		l := pop(t, e.f)
		if _, err := e.f.Control.SetSettings(ctx, 0, map[string]string{"max_depth": "2"}, control.BudgetKept); err != nil {
			t.Fatal(err)
		}
		l.Late = true
		x, err := e.f.Exchange(ctx, nil, []*frontier.Lease{l}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(x.Again) != 0 || x.Info.Settings != 1 {
			t.Fatalf("again %d, settings %d; want the late URL given back and version 1 said", len(x.Again), x.Info.Settings)
		}
		if n := s.Client.ZCard(ctx, keyspace.KeysFor("t").Leases).Val(); n != 0 {
			t.Fatalf("%d leases held; want the late one given back", n)
		}
	})
}

// A raised budget reopens a crawl that ended on it: the change clears
// every shard's done flag and the end's scan, in the same step as the
// version; a change of a crawl made anew since is refused, with nothing
// written.
func TestARaisedBudgetReopensTheCrawl(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		s.Client.HSet(ctx, keyspace.KeysFor("rb").Config, "scope", "host")
		f, err := frontier.Create(ctx, s.Client, "rb", frontier.Options{Shards: 2}, dedup.Params{Capacity: 1000, FPRate: 0.01})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			k := keyspace.KeysForShard("rb", i)
			s.Client.Set(ctx, k.DoneFlag, "1", 0)
			s.Client.HSet(ctx, k.Stats, "end_scan", "done")
		}
		if _, err := f.Control.SetSettings(ctx, 0, map[string]string{"max_pages": "20"}, control.BudgetRaised); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			k := keyspace.KeysForShard("rb", i)
			if s.Client.Exists(ctx, k.DoneFlag).Val() != 0 || s.Client.HExists(ctx, k.Stats, "end_scan").Val() {
				t.Fatalf("shard %d still ended after the budget was raised", i)
			}
		}
		s.Client.HSet(ctx, keyspace.KeysFor("rb").Config, control.InstanceField, "another")
		if _, err := f.Control.SetSettings(ctx, 1, map[string]string{"max_pages": "30"}, control.BudgetRaised); !errors.Is(err, frontier.ErrGone) {
			t.Fatalf("a change of a crawl made anew: %v; want ErrGone", err)
		}
		if v := s.Client.HGet(ctx, keyspace.KeysFor("rb").Config, "max_pages").Val(); v != "20" {
			t.Fatalf("max_pages %q after a refused change; want 20", v)
		}
	})
}

// sixHosts makes crawl name over shards and queues two URLs of each of six
// hosts, a to f (spread over the shards).
func sixHosts(t *testing.T, s *redistest.Server, name string, shards int) *frontier.Frontier {
	t.Helper()
	ctx := context.Background()
	s.Client.HSet(ctx, keyspace.KeysFor(name).Config, "scope", "host")
	f, err := frontier.Create(ctx, s.Client, name, frontier.Options{Shards: shards}, dedup.Params{Capacity: 1000, FPRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	var items []frontier.Item
	for _, h := range []string{"a", "b", "c", "d", "e", "f"} {
		items = append(items, hostURLs(h, 2)...)
	}
	if _, err := f.Enqueue(ctx, items); err != nil {
		t.Fatal(err)
	}
	return f
}

// A change of the policy (Worker.reload's SetPolicy, from the exchanger's
// goroutine) while other goroutines exchange, queue and send heartbeats: no
// call reads the options while the change writes them (run with -race; the
// clock's method once copied the whole Options, policy and all, on every
// heartbeat, and CI's race detector caught it mid-crawl).
func TestAPolicyChangeRacesNoCallThatReadsTheOptions(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		ctx := context.Background()
		const rounds = 50
		done := make(chan error, 3)
		go func() {
			for i := range rounds {
				p := e.f.PolicyNow()
				p.HostRate, p.Version = float64(i+1), int64(i)
				e.f.SetPolicy(p)
			}
			done <- nil
		}()
		go func() {
			for range rounds {
				if _, err := e.f.Registry.Heartbeat(ctx, "w1", 0, nil); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		go func() {
			for i := range rounds {
				if _, err := e.f.Enqueue(ctx, []frontier.Item{{URL: fmt.Sprintf("http://h%d.example/", i)}}); err != nil {
					done <- err
					return
				}
				if _, err := e.f.Exchange(ctx, nil, nil, 1); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		for range 3 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	})
}
