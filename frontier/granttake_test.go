package frontier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"pgregory.net/rapid"
)

// Grants and takes of several processes in any order, with takes that
// never come (a pipeline cut between the handout and its take): over
// random schedules, with and without a page budget and a host rate, no URL
// is leased twice, every URL is leased or queued, the budget's leases
// never pass it, a host of an hour an interval never has more URLs leased
// than its burst, and at the end full exchanges lease what is left: every
// URL (no budget, no rate), the budget's worth, or each host's burst at
// most.
func TestGrantsAndTakesInAnyOrderLoseNothingAndKeepTheirBounds(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		rapid.Check(t, func(rt *rapid.T) {
			ctx := context.Background()
			s.Client.FlushDB(ctx)
			nh, per := rapid.IntRange(1, 4).Draw(rt, "hosts"), rapid.IntRange(1, 5).Draw(rt, "urls a host")
			total := nh * per
			var p Policy
			if rapid.Bool().Draw(rt, "budget") {
				p.PageBudget = int64(rapid.IntRange(1, total).Draw(rt, "pages"))
			}
			if rapid.Bool().Draw(rt, "rate") {
				p.HostRate, p.HostBurst = 1.0/3600, rapid.IntRange(1, 3).Draw(rt, "burst")
			}
			k := keyspace.KeysFor("gt")
			s.Client.HSet(ctx, k.Config, "scope", "host")
			f0, err := Create(ctx, s.Client, "gt", Options{Shards: 1, Policy: p}, dedup.Params{Capacity: 10000, FPRate: 0.001})
			if err != nil {
				rt.Fatal(err)
			}
			enqueueEach(rt, f0, total, func(i int) string { return fmt.Sprintf("http://h%d.example/%d", i/per, i%per) })
			procs := []*Frontier{f0}
			for range 2 {
				f, err := Open(ctx, s.Client, "gt", Options{Shards: 1, Instance: f0.Instance, Policy: p})
				if err != nil {
					rt.Fatal(err)
				}
				procs = append(procs, f)
			}
			pending := make([]*part, len(procs))
			check := func(when string) map[string]int {
				hosts := map[string]int{}
				seen := map[string]bool{}
				for _, m := range s.Client.ZRange(ctx, k.Leases, 0, -1).Val() {
					parts := strings.SplitN(m, "\n", 3)
					var it Item
					if len(parts) != 3 || json.Unmarshal([]byte(parts[2]), &it) != nil {
						rt.Fatalf("%s: lease %q", when, m)
					}
					if seen[it.URL] {
						rt.Fatalf("%s: %s leased twice", when, it.URL)
					}
					seen[it.URL] = true
					hosts[parts[1]]++
				}
				queued := 0
				for _, n := range s.Client.HGetAll(ctx, k.Lengths).Val() {
					var v int
					fmt.Sscan(n, &v)
					queued += v
				}
				if len(seen)+queued != total {
					rt.Fatalf("%s: %d leased + %d queued; want the %d URLs", when, len(seen), queued, total)
				}
				if p.PageBudget > 0 && int64(len(seen)) > p.PageBudget {
					rt.Fatalf("%s: %d leases under a budget of %d pages", when, len(seen), p.PageBudget)
				}
				for h, n := range hosts {
					if p.HostRate > 0 && n > p.HostBurst {
						rt.Fatalf("%s: %s has %d URLs leased; its burst is %d, an hour an interval", when, h, n, p.HostBurst)
					}
				}
				return hosts
			}
			steps := rapid.IntRange(1, 12).Draw(rt, "steps")
			for i := range steps {
				w := rapid.IntRange(0, len(procs)-1).Draw(rt, "process")
				sh := procs[w].fs[0]
				what := rapid.IntRange(0, 2).Draw(rt, "what")
				if pt := pending[w]; pt != nil && what != 1 { // its last grant's take never came
					abandon(rt, sh, pt)
					pending[w] = nil
				}
				switch what {
				case 0: // a grant; its take later, or never
					pt := &part{pop: rapid.IntRange(1, 4).Draw(rt, "want")}
					if err := sh.prepare(ctx, pt); err != nil {
						rt.Fatal(err)
					}
					grantOnly(rt, s, pt)
					pending[w] = pt
				case 1: // the take of the process's last grant, if it has one
					pt := pending[w]
					if pt == nil {
						continue
					}
					pending[w] = nil
					pt.take.cmd = takeScript.Run(ctx, s.Client, pt.take.keys, pt.take.args...)
					if err := sh.finish(ctx, pt, sh.o.now(), sh.o.now()); err != nil {
						rt.Fatal(err)
					}
				case 2: // a whole exchange
					if _, err := procs[w].Exchange(ctx, nil, nil, rapid.IntRange(1, 4).Draw(rt, "want")); err != nil {
						rt.Fatal(err)
					}
				}
				check(fmt.Sprintf("step %d", i))
			}
			for w, pt := range pending {
				if pt != nil {
					abandon(rt, procs[w].fs[0], pt)
				}
			}
			for range total + 1 {
				if _, err := f0.Exchange(ctx, nil, nil, total); err != nil {
					rt.Fatal(err)
				}
			}
			hosts := check("drained")
			leased := 0
			for _, n := range hosts {
				leased += n
			}
			switch {
			case p.HostRate > 0:
				// each host's burst at most, checked above: a take that never came spent its tokens
			case p.PageBudget > 0:
				if int64(leased) != p.PageBudget {
					rt.Fatalf("drained: %d leased; want the budget's %d", leased, p.PageBudget)
				}
			case leased != total:
				rt.Fatalf("drained: %d leased; want all %d", leased, total)
			}
		})
	})
}
