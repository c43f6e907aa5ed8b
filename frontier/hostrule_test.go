package frontier_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/perhost"
	"github.com/redcrawl/crawler/internal/redistest"
	"golang.org/x/time/rate"
)

// A host given its own rate and burst is popped as x/time/rate allows at
// those, over a run of pops at chosen moments, while a host without one
// keeps the crawl's (one token an hour); a lease of the host says its pop
// kept to its own rate.
func TestAHostsOwnRateHoldsAsTheOracleAllows(t *testing.T) {
	s := redistest.Mini(t)
	ctx := context.Background()
	e := setup(t, s)
	e.f.HostRate, e.f.HostBurst = 1.0/3600, 1
	if err := e.f.Hosts.SetRule(ctx, "a", 2, 3); err != nil {
		t.Fatal(err)
	}
	e.enqueue(t, append(hostURLs("a", 60), hostURLs("b", 60)...))
	oracle := rate.NewLimiter(2, 3)
	at := e.clock
	for i, step := range []time.Duration{0, 0, 100, 400, 499, 1, 250, 2000, 0, 300, 700, 10} {
		e.advance(step * time.Millisecond)
		at = at.Add(step * time.Millisecond)
		want := 0
		for oracle.AllowN(at, 1) {
			want++
		}
		var a, b int
		for _, l := range popN(t, e.f, 10).Popped {
			switch l.Host {
			case "a":
				a++
				if !l.HasOwnRate || l.OwnRate != 2 {
					t.Fatalf("a's lease says own rate %v (%v); want 2", l.OwnRate, l.HasOwnRate)
				}
			case "b":
				b++
				if l.HasOwnRate {
					t.Fatal("b's lease says it has a rate of its own")
				}
			}
		}
		if a != want {
			t.Fatalf("pop %d (+%dms): %d of a's URLs; its own rate allows %d", i, step, a, want)
		}
		if wantB := map[bool]int{true: 1, false: 0}[i == 0]; b != wantB {
			t.Fatalf("pop %d: %d of b's URLs; the crawl's rate (one an hour) allows %d", i, b, wantB)
		}
	}
}

// Set, listed and cleared, on both Redis kinds: a host's own rate lets it
// go faster than the crawl's; cleared, the crawl's holds again; clearing
// also lifts the host's pause.
func TestAHostsOwnRuleIsSetListedAndCleared(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 1.0/3600, 1, 0
		if err := e.f.Hosts.SetRule(ctx, "a", 1.0/3600, 5); err != nil {
			t.Fatal(err)
		}
		e.enqueue(t, append(hostURLs("a", 20), hostURLs("b", 20)...))
		count := func() map[string]int {
			n := map[string]int{}
			for _, l := range popN(t, e.f, 20).Popped {
				n[l.Host]++
			}
			return n
		}
		if n := count(); n["a"] != 5 || n["b"] != 1 {
			t.Fatalf("popped %v; want a's burst of 5 and b's 1", n)
		}
		rules, err := e.f.Hosts.Rules(ctx)
		if err != nil || fmt.Sprint(rules) != fmt.Sprint([]perhost.Rule{{Host: "a", Rate: 1.0 / 3600, Burst: 5}}) {
			t.Fatalf("HostRules = %v, %v; want a's", rules, err)
		}
		if err := e.f.Hosts.SetRule(ctx, "b", 0, 1); err != nil { // no limit for b
			t.Fatal(err)
		}
		if n := count(); n["a"] != 0 || n["b"] != 19 {
			t.Fatalf("popped %v; want b's 19 left (no limit), none of a's (its burst spent)", n)
		}
		if _, err := e.f.Hosts.Pause(ctx, "a", time.Hour, "a test"); err != nil {
			t.Fatal(err)
		}
		if err := e.f.Hosts.ClearRule(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if rules, _ := e.f.Hosts.Rules(ctx); len(rules) != 1 || rules[0].Host != "b" {
			t.Fatalf("HostRules after clearing a = %v; want b's only", rules)
		}
		if n := count(); n["a"] != 1 {
			t.Fatalf("popped %v; want one of a's: its pause lifted, the crawl's rate again (a burst of 1)", n)
		}
		if err := e.f.Hosts.SetRule(ctx, "a", -1, 1); err == nil {
			t.Error("a negative rate was taken")
		}
	})
}

// A blocked host, on both Redis kinds: its queued URLs end with records at
// once; no pop hands out its URLs; a URL of it given back (a worker held
// it) ends with a record at the next pop; a link to it is not queued; the
// listing says it is blocked; and a clear lifts the block.
//
// A host the crawl blocks itself, for a reason (its login failed:
// BlockFor), is blocked alike, and its records say why.
func TestABlockedHostsURLsEndWithRecordsAndNoneIsQueued(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		for _, why := range []string{"", "the login failed: HTTP 403"} {
			s.Client.FlushDB(context.Background())
			blockedHost(t, s, why)
		}
	})
}

// blockedHost blocks host a, by hand (why "") or for why, and checks
// what becomes of its URLs.
func blockedHost(t *testing.T, s *redistest.Server, why string) {
	ctx := context.Background()
	e := setup(t, s)
	e.enqueue(t, append(hostURLs("a", 5), hostURLs("b", 3)...))
	var held *frontier.Lease
	for _, l := range popN(t, e.f, 2).Popped {
		if l.Host == "a" {
			held = l
		}
	}
	if held == nil {
		t.Fatal("the first pop had no URL of a")
	}
	ended, err := e.f.Hosts.BlockFor(ctx, "a", why)
	if err != nil || ended != 4 {
		t.Fatalf("BlockHost = %d, %v; want the 4 URLs of a still queued ended", ended, err)
	}
	if rules, err := e.f.Hosts.Rules(ctx); err != nil || len(rules) != 1 || !rules[0].Blocked || rules[0].Host != "a" {
		t.Errorf("HostRules = %+v, %v; want a, blocked", rules, err)
	}
	held.Late = true // as a worker gives back a URL it had not started
	x, err := e.f.Exchange(ctx, nil, []*frontier.Lease{held}, 10)
	if err != nil || len(x.Again) != 0 || len(x.Popped) != 2 {
		t.Fatalf("giving back a's URL: %v, %d kept, %d popped; want it back in a's queue, and b's other two popped", err, len(x.Again), len(x.Popped))
	}
	for _, l := range x.Popped {
		if l.Host == "a" {
			t.Errorf("a pop handed out %s of the blocked host", l.Item.URL)
		}
	}
	skipped, says := 0, "crawler host --block"
	if why != "" {
		says = "not fetched: " + why
	}
	for _, m := range s.Client.XRange(ctx, "crawl:{t}:results", "-", "+").Val() {
		if rec, _ := m.Values["rec"].(string); strings.Contains(rec, `"outcome":"skipped"`) && strings.Contains(rec, says) {
			skipped++
		}
	}
	if skipped != 5 {
		t.Errorf("%d records say the host was blocked; want 5: the 4 queued and the one given back", skipped)
	}
	finish(t, e.f, x.Popped[0], frontier.Outcome{Stat: "ok", Fetched: true,
		Children: []frontier.Item{{URL: "http://a/new", Depth: 1}, {URL: "http://c/new", Depth: 1}}})
	st, err := e.f.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st["skipped_links:blocked"] != 1 || st["skipped"] != 5 {
		t.Errorf("stats %v; want 1 link to a skipped as blocked, 5 URLs skipped", st)
	}
	if n := queued(t, s, "a"); n != 0 {
		t.Errorf("a's queue holds %d URLs; want none", n)
	}
	if err := e.f.Hosts.ClearRule(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	finish(t, e.f, x.Popped[1], frontier.Outcome{Stat: "ok", Fetched: true, Children: []frontier.Item{{URL: "http://a/after", Depth: 1}}})
	if n := queued(t, s, "a"); n != 1 {
		t.Errorf("after the clear, a's queue holds %d URLs; want the new link", n)
	}
}
