package alternatives_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/alternatives"
	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/internal/redistest"
)

const (
	planned = 10_000 // URLs the filters are planned for
	fpRate  = 0.01
	batch   = 500 // links a page's batch
)

func urls(kind string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("https://docs.example.org/%s/%d.html", kind, from+i)
	}
	return out
}

// filter is one of the compared filters: how to add a batch and ask about
// one, and the keys it keeps.
type filter struct {
	name     string
	add      func(ctx context.Context, items []string) error
	contains func(ctx context.Context, items []string) ([]bool, error)
	pattern  string
}

// measured is what the comparison reads off a filter.
type measured struct {
	fp, fp4x        float64 // false positives at its plan, and at four times it
	bytesAURL       float64 // MEMORY USAGE of its keys over the URLs, at its plan
	calls, commands float64 // round trips and Redis commands a batch of adds
}

// measure fills f to plan in batches (counting round trips and commands
// past the first batch),
// asks about 20 000 URLs never added, then fills it to four times its
// plan and asks again.
func measure(t *testing.T, s *redistest.Server, trips interface{ Load() int64 }, f filter) measured {
	t.Helper()
	ctx := context.Background()
	var m measured
	if err := f.add(ctx, urls("added", 0, batch)); err != nil { // the first: connections made, scripts loaded
		t.Fatal(err)
	}
	s.Client.ConfigResetStat(ctx)
	before := trips.Load()
	for from := batch; from < planned; from += batch {
		if err := f.add(ctx, urls("added", from, batch)); err != nil {
			t.Fatal(err)
		}
	}
	batches := float64(planned/batch - 1)
	m.calls = float64(trips.Load()-before) / batches
	var cmds int64
	for name, st := range redistest.CommandStats(t, s.Client) {
		if !strings.HasPrefix(name, "config") {
			cmds += st.Calls
		}
	}
	m.commands = float64(cmds) / batches
	b, n, err := alternatives.BytesAKey(ctx, s.Client, f.pattern)
	if err != nil || n == 0 {
		t.Fatalf("%s: its keys: %v", f.name, err)
	}
	m.bytesAURL = b * float64(n) / planned
	m.fp = falsePositives(t, f)
	for from := planned; from < 4*planned; from += batch {
		if err := f.add(ctx, urls("added", from, batch)); err != nil {
			t.Fatal(err)
		}
	}
	m.fp4x = falsePositives(t, f)
	return m
}

func falsePositives(t *testing.T, f filter) float64 {
	t.Helper()
	fp, asked := 0, 0
	for from := 0; from < 20_000; from += batch {
		got, err := f.contains(context.Background(), urls("never", from, batch))
		if err != nil {
			t.Fatal(err)
		}
		for _, seen := range got {
			asked++
			if seen {
				fp++
			}
		}
	}
	return float64(fp) / float64(asked)
}

// RedCrawl's blocked filter in bitmaps (dedup: one script call a batch,
// its layers grown past the plan) against the seeds' plain SETBIT filter:
// sized with 2^16 bits as a seed wrote it (in Go ^ is XOR: 18 bits), with
// 1<<16 as it meant, and sized right for the plan. Each planned for
// 10 000 URLs at 1 %, on redis-server: false positives at the plan and at
// four times it, bytes a URL, round trips and commands a batch of 500.
// And RedisBloom is not there to compare: Debian's redis-server has no
// BF.ADD.
func TestBitmapsAgainstThePlainFilter(t *testing.T) {
	ctx := context.Background()
	probe := redistest.Real(t)
	if err := probe.Client.Do(ctx, "BF.ADD", "bf", "x").Err(); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("BF.ADD on this redis-server: %v; the comparison says RedisBloom is not in Debian's Redis", err)
	}
	right := alternatives.SizedFor("plain", planned, fpRate)
	plains := []alternatives.PlainBloom{{Key: "plain", M: 2 ^ 16, K: 7}, {Key: "plain", M: 1 << 16, K: 7}, right}
	names := []string{"plain, m = 2^16 as written (18 bits)", "plain, m = 1<<16 (65 536 bits)", fmt.Sprintf("plain, sized right (%d bits, k %d)", right.M, right.K)}
	got := map[string]measured{}
	for i, p := range plains {
		s := redistest.Real(t)
		c := s.Client
		trips := redistest.RoundTrips(c)
		got[names[i]] = measure(t, s, trips, filter{name: names[i], pattern: "plain",
			add:      func(ctx context.Context, items []string) error { return p.Add(ctx, c, items) },
			contains: func(ctx context.Context, items []string) ([]bool, error) { return p.Contains(ctx, c, items) }})
	}
	s := redistest.Real(t)
	trips := redistest.RoundTrips(s.Client)
	f, err := dedup.Open(ctx, s.Client, "seen", dedup.Params{Capacity: planned, FPRate: fpRate})
	if err != nil {
		t.Fatal(err)
	}
	const ours = "RedCrawl's (dedup, blocked, layered)"
	got[ours] = measure(t, s, trips, filter{name: ours, pattern: "seen*",
		add:      func(ctx context.Context, items []string) error { _, err := f.AddNew(ctx, items); return err },
		contains: f.Contains})
	for _, name := range append(names, ours) {
		m := got[name]
		t.Logf("%-40s false positives %6.2f %% at the plan, %6.2f %% at 4×; %5.2f bytes a URL; %4.2f round trips and %5.0f commands a batch of %d",
			name, 100*m.fp, 100*m.fp4x, m.bytesAURL, m.calls, m.commands, batch)
	}
	if m := got[names[0]]; m.fp < 0.99 {
		t.Errorf("18 bits for 10 000 URLs: %.2f %% false positives; want nearly all", 100*m.fp)
	}
	if m := got[names[1]]; m.fp < 0.03 || m.fp > 0.08 {
		t.Errorf("65 536 bits for 10 000 URLs at k 7: %.2f %% false positives; theory says 5.2 %%", 100*m.fp)
	}
	if m := got[names[2]]; m.fp > 1.5*fpRate || m.fp4x < 0.25 {
		t.Errorf("plain filter sized right: %.2f %% at the plan, %.2f %% at 4×; want about 1 %%, then saturated", 100*m.fp, 100*m.fp4x)
	}
	plain := got[names[2]]
	if m := got[ours]; m.fp > fpRate || m.fp4x > fpRate/(1-0.1) || m.calls != 1 || m.commands > plain.commands/3 {
		t.Errorf("dedup's filter: %.2f %% at the plan, %.2f %% at 4×, %.2f round trips and %.0f commands a batch (the plain one %.0f); "+
			"want at most 1 %% at the plan and p/(1−r) = 1.11 %% past it (layers grown), one call, a fraction of the commands",
			100*m.fp, 100*m.fp4x, m.calls, m.commands, plain.commands)
	}
}

// Cache penetration: a database of 10 000 keys behind a filter of them.
// Every key that exists is found; of 20 000 asked that never existed, the
// database sees only the filter's false positives (about 1 %), not all.
// On miniredis, a call a key, every fifth key is asked for and 5 000 that
// never existed (its Lua under the race detector took 34 s for all).
func TestAFilterKeepsNeverExistingKeysOffTheDatabase(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f, err := dedup.Open(ctx, s.Client, "keys", dedup.Params{Capacity: planned, FPRate: fpRate})
		if err != nil {
			t.Fatal(err)
		}
		db := map[string]string{}
		for from := 0; from < planned; from += batch {
			keys := urls("user", from, batch)
			for _, k := range keys {
				db[k] = "row of " + k
			}
			if _, err := f.AddNew(ctx, keys); err != nil {
				t.Fatal(err)
			}
		}
		g := &alternatives.Guarded{Filter: f, DB: func(k string) (string, bool) { v, ok := db[k]; return v, ok }}
		every, never := 1, 20_000
		if s.Mini != nil {
			every, never = 5, 5_000
		}
		for i, k := range urls("user", 0, planned) {
			if i%every != 0 {
				continue
			}
			if v, err := g.Get(ctx, k); err != nil || v != db[k] {
				t.Fatalf("%s: %q, %v; a key that exists must be found", k, v, err)
			}
		}
		g.Trips.Store(0)
		for _, k := range urls("nobody", 0, never) {
			if _, err := g.Get(ctx, k); !errors.Is(err, alternatives.ErrNeverExisted) {
				t.Fatalf("%s: %v", k, err)
			}
		}
		share := float64(g.Trips.Load()) / float64(never)
		t.Logf("%d keys that never existed: %d reached the database (%.2f %%, the filter's false positives)", never, g.Trips.Load(), 100*share)
		if share > 1.5*fpRate {
			t.Errorf("%.2f %% of never-existing keys reached the database; want about the filter's 1 %%", 100*share)
		}
	})
}
