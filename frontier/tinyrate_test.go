package frontier_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
	"pgregory.net/rapid"
)

// A host's rate anywhere from far below the slowest a crawl accepts (one a
// day; 1e-12 here, a token every 31,700 years) to no limit, and a burst
// from 1 to 1000: every exchange's reply reaches Go (cjson writes its times
// of 1e14 and more in exponent form), the host's first URL is popped, and
// another host at 50/s is popped as before. On both Redis kinds. Each case
// starts from an empty Redis: the URLs an earlier case left queued (a slow
// host's, or more than a fast host's burst) would otherwise take the pops a
// case counts on, and fail it for a reason of the test's own.
func TestEveryRateFromTheSlowestToNoneIsPopped(t *testing.T) {
	redistest.Both(t, func(tt *testing.T, s *redistest.Server) {
		ctx := context.Background()
		n := 0
		rapid.Check(tt, func(t *rapid.T) {
			n++
			s.Client.FlushDB(ctx)
			e := setup(tt, s)
			slow, fast := fmt.Sprintf("slow%d.example", n), fmt.Sprintf("fast%d.example", n)
			rate := math.Pow(10, rapid.Float64Range(-12, 6).Draw(t, "log10 rate"))
			if rapid.IntRange(0, 9).Draw(t, "inf?") == 0 {
				rate = math.Inf(1)
			}
			burst := rapid.IntRange(1, 1000).Draw(t, "burst")
			k := rapid.IntRange(1, 30).Draw(t, "URLs")
			if err := e.f.Hosts.SetRule(ctx, slow, rate, burst); err != nil {
				t.Fatal(err)
			}
			if err := e.f.Hosts.SetRule(ctx, fast, 50, 5); err != nil {
				t.Fatal(err)
			}
			var items []frontier.Item
			for i := range k {
				items = append(items, frontier.Item{URL: fmt.Sprintf("http://%s/%d", slow, i)}, frontier.Item{URL: fmt.Sprintf("http://%s/%d", fast, i)})
			}
			if _, err := e.f.Enqueue(ctx, items); err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for range 3 {
				x, err := e.f.Exchange(ctx, nil, nil, 2*k)
				if err != nil {
					t.Fatalf("rate %v burst %d: %v", rate, burst, err)
				}
				var done []frontier.Finished
				for _, l := range x.Popped {
					switch {
					case strings.HasPrefix(l.Item.URL, "http://"+slow+"/"):
						got[slow]++
					case strings.HasPrefix(l.Item.URL, "http://"+fast+"/"):
						got[fast]++
					default:
						t.Fatalf("popped %s, a URL this case did not queue", l.Item.URL)
					}
					done = append(done, frontier.Finished{Lease: l, Outcome: frontier.Outcome{Stat: "done"}})
				}
				if _, err := e.f.Exchange(ctx, done, nil, 0); err != nil {
					t.Fatalf("rate %v burst %d: finishing: %v", rate, burst, err)
				}
			}
			if got[slow] == 0 || got[fast] == 0 {
				t.Fatalf("rate %v burst %d: popped %v; want both hosts' first URLs", rate, burst, got)
			}
		})
	})
}
