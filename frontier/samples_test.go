package frontier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/rendering"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
	"pgregory.net/rapid"
)

// What a crawl learns of its hosts' need of a browser, over random runs of
// offers, claims and tells on three hosts: no host has more samples
// offered than its most, none waits past the cap, a claimed sample is
// not claimed again while its lease holds, the first sample that found
// something decides render and most that found nothing decide plain, a
// verdict never changes, and a host with a verdict gets no more samples.
func TestSamplesDecideAHostsLane(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		rapid.Check(t, func(rt *rapid.T) {
			ctx := context.Background()
			f, _ := openLanes(rt, s, frontier.Policy{})
			most := rapid.IntRange(1, 4).Draw(rt, "most")
			reserve := most + rapid.IntRange(0, 3).Draw(rt, "reserve")
			waitMost := rapid.IntRange(1, 6).Draw(rt, "waitMost")
			hosts := []string{"a", "b", "c"}
			offered, told, verdict := map[string]int{}, map[string]int{}, map[string]string{}
			type claim struct {
				s   rendering.Sample
				raw string
			}
			var held []claim
			waiting, seq := 0, 0
			for range rapid.IntRange(1, 50).Draw(rt, "steps") {
				switch rapid.IntRange(0, 2).Draw(rt, "op") {
				case 0:
					h := rapid.SampledFrom(hosts).Draw(rt, "host")
					seq++
					q, v, err := f.Render.OfferSample(ctx, rendering.Sample{URL: fmt.Sprintf("http://%s/%d", h, seq), Host: h}, reserve, waitMost)
					if err != nil {
						rt.Fatal(err)
					}
					want := waiting < waitMost && (verdict[h] == rendering.VerdictRender || verdict[h] == "" && offered[h] < reserve)
					if q != want {
						rt.Fatalf("offer of %s queued %v; want %v (offered %d of %d, %d waiting of %d, verdict %q)", h, q, want, offered[h], reserve, waiting, waitMost, verdict[h])
					}
					if wantV := verdict[h]; (wantV == "" && v != rendering.VerdictLearning) || (wantV != "" && v != wantV) {
						rt.Fatalf("offer of %s says verdict %q; want %q", h, v, wantV)
					}
					if q {
						offered[h]++
						waiting++
					}
				case 1:
					s, raw, v, ok, err := f.Render.ClaimSample(ctx, time.Hour)
					if err != nil {
						rt.Fatal(err)
					}
					if want := verdict[s.Host]; ok && (want == "" && v != rendering.VerdictLearning || want != "" && v != want) {
						rt.Fatalf("claim of a sample of %s says verdict %q; want %q", s.Host, v, want)
					}
					if ok != (waiting > len(held)) {
						rt.Fatalf("claim: got one %v with %d waiting and %d held", ok, waiting, len(held))
					}
					for _, c := range held {
						if ok && c.raw == raw {
							rt.Fatalf("sample %s claimed twice within its lease", raw)
						}
					}
					if ok {
						held = append(held, claim{s, raw})
					}
				case 2:
					if len(held) == 0 {
						continue
					}
					i := rapid.IntRange(0, len(held)-1).Draw(rt, "tell")
					c := held[i]
					held = append(held[:i], held[i+1:]...)
					found := rapid.Bool().Draw(rt, "found")
					v, err := f.Render.TellSample(ctx, c.s, c.raw, found, most)
					if err != nil {
						rt.Fatal(err)
					}
					waiting--
					told[c.s.Host]++
					h := c.s.Host
					if verdict[h] == "" && found {
						verdict[h] = rendering.VerdictRender
					} else if verdict[h] == "" && told[h] >= most {
						verdict[h] = rendering.VerdictPlain
					}
					want := verdict[h]
					if want == "" {
						want = rendering.VerdictLearning
					}
					if v != want {
						rt.Fatalf("tell of %s (found %v, told %d of %d): verdict %q; want %q", h, found, told[h], most, v, want)
					}
				}
			}
			learned, n, err := f.Render.LearnedHosts(ctx)
			if err != nil {
				rt.Fatal(err)
			}
			if n != int64(waiting) {
				rt.Fatalf("%d samples wait; the model has %d", n, waiting)
			}
			for h, v := range verdict {
				if learned[h].Verdict != v {
					rt.Fatalf("host %s learned %q; want %q", h, learned[h].Verdict, v)
				}
			}
		})
	})
}

// A sample waiting for a render worker holds the crawl's end (its links
// may be queued yet): the sweeps find the crawl not over while one waits
// or is claimed, and over once it is told, alone and over shards.
func TestAWaitingSampleHoldsTheCrawlsEnd(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		for _, shards := range []int{1, 3} {
			ctx := context.Background()
			s.Client.FlushDB(ctx)
			name := fmt.Sprintf("sm%d", shards)
			s.Client.HSet(ctx, keyspace.KeysFor(name).Config, "scope", "host")
			f, err := frontier.Create(ctx, s.Client, name, frontier.Options{Shards: shards}, dedup.Params{Capacity: 1000, FPRate: 0.01})
			if err != nil {
				t.Fatal(err)
			}
			lock := "sm-lock"
			epoch := s.Client.Incr(ctx, leader.EpochKey(lock)).Val()
			sweep := func() frontier.Sweep {
				var sw frontier.Sweep
				for range 3 { // over shards the end takes two whole sweeps that agree
					if sw, err = f.Schedule(ctx, leader.EpochKey(lock), epoch, 3, 100, 0); err != nil {
						t.Fatal(err)
					}
				}
				return sw
			}
			smp := rendering.Sample{URL: "http://a/", Host: "a"}
			if q, _, err := f.Render.OfferSample(ctx, smp, 2, 10); err != nil || !q {
				t.Fatalf("offer: %v %v", q, err)
			}
			if sw := sweep(); sw.CrawlOver {
				t.Fatalf("%d shards: over with a sample waiting", shards)
			}
			got, raw, _, ok, err := f.Render.ClaimSample(ctx, time.Minute)
			if err != nil || !ok || got != smp {
				t.Fatalf("claim: %+v %v %v", got, ok, err)
			}
			if sw := sweep(); sw.CrawlOver {
				t.Fatalf("%d shards: over with a sample claimed", shards)
			}
			if _, err := f.Render.TellSample(ctx, got, raw, false, 2); err != nil {
				t.Fatal(err)
			}
			if sw := sweep(); !sw.CrawlOver {
				t.Fatalf("%d shards: not over once the sample was told", shards)
			}
		}
	})
}

// A path prefix of a host is learnt by the rule of a host: the first page
// that found something decides render, most that found nothing plain; a
// verdict is final; prefixes and hosts are apart, and what no page taught
// reads as learning.
func TestAPathPrefixIsLearntByTheRuleOfAHost(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f, _ := openLanes(t, s, frontier.Policy{})
		learn := func(prefix string, found bool, want string) {
			t.Helper()
			v, err := f.Render.LearnPrefix(ctx, "a", prefix, found, 3)
			if err != nil || v != want {
				t.Fatalf("learn %s found %v: %q, %v; want %q", prefix, found, v, err, want)
			}
			if got, err := f.Render.PrefixVerdict(ctx, "a", prefix); err != nil || got != want {
				t.Fatalf("the verdict of %s read back: %q, %v; want %q", prefix, got, err, want)
			}
		}
		if v, err := f.Render.PrefixVerdict(ctx, "a", "/new/"); err != nil || v != rendering.VerdictLearning {
			t.Fatalf("a prefix no page taught: %q, %v", v, err)
		}
		learn("/docs/", false, rendering.VerdictLearning)
		learn("/docs/", false, rendering.VerdictLearning)
		learn("/docs/", false, rendering.VerdictPlain)
		learn("/docs/", true, rendering.VerdictPlain) // final
		learn("/app/", false, rendering.VerdictLearning)
		learn("/app/", true, rendering.VerdictRender)
		learn("/app/", false, rendering.VerdictRender)
		learned, _, err := f.Render.LearnedHosts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if learned["a /docs/"].Verdict != rendering.VerdictPlain || learned["a /app/"].Verdict != rendering.VerdictRender || learned["a"].Verdict != "" {
			t.Fatalf("learned %+v; want the two prefixes apart from the host, which no sample taught", learned)
		}
	})
}
