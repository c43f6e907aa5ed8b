package frontier_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/rendering"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/politeness"
	"pgregory.net/rapid"
)

// A token taken for a request that is no popped URL's (a subresource) is
// one of the host's tokens: over random runs of pops (by either lane) and
// TakeToken calls at every rate, burst and horizon, the grants handed out
// are never more than the bucket holds: its burst, and its rate over the
// horizon, the windows' early reach and the time the run took.
func TestTakeTokenSharesTheHostsBucketWithThePops(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		rapid.Check(t, func(rt *rapid.T) {
			ctx := context.Background()
			rate := rapid.SampledFrom([]float64{0.2, 1, 5, 50, 1000}).Draw(rt, "rate")
			burst := rapid.SampledFrom([]int{1, 2, 5}).Draw(rt, "burst")
			ahead := time.Duration(rapid.SampledFrom([]int{0, 100, 2000}).Draw(rt, "aheadMs")) * time.Millisecond
			plain, render := openLanes(rt, s, frontier.Policy{HostRate: rate, HostBurst: burst, PopAhead: ahead})
			var items []frontier.Item
			for i := range 200 {
				items = append(items, frontier.Item{URL: fmt.Sprintf("http://a/%d", i), Depth: 1})
			}
			if _, err := plain.Enqueue(ctx, items); err != nil {
				rt.Fatal(err)
			}
			if rapid.Bool().Draw(rt, "renderLane") {
				if _, err := plain.Render.SetLane(ctx, "a", frontier.LaneRender); err != nil {
					rt.Fatal(err)
				}
			}
			start := time.Now()
			grants := 0
			for range rapid.IntRange(1, 30).Draw(rt, "steps") {
				if rapid.Bool().Draw(rt, "pop") {
					for _, f := range []*frontier.Frontier{plain, render} {
						x, err := f.Exchange(ctx, nil, nil, rapid.IntRange(1, 3).Draw(rt, "want"))
						if err != nil {
							rt.Fatal(err)
						}
						grants += len(x.Popped)
					}
					continue
				}
				_, err := plain.Render.TakeToken(ctx, "a", ahead)
				var no *rendering.NoTokenError
				switch {
				case err == nil:
					grants++
				case !errors.As(err, &no) || no.Retry <= 0:
					rt.Fatalf("TakeToken: %v", err)
				}
			}
			early, _ := politeness.TokenWindow(rate, burst)
			span := ahead + early + time.Since(start)
			most := burst + int(math.Ceil(rate*span.Seconds())) + 1
			if grants > most {
				rt.Fatalf("rate %v burst %d ahead %v: %d grants in %v; the bucket holds at most %d", rate, burst, ahead, grants, time.Since(start), most)
			}
		})
	})
}

// With the bucket spent, TakeToken says when to ask again (when the next
// token's window opens), and a token it took leaves the next pop nothing:
// one bucket.
func TestATakenTokenIsOneThePopDoesNotHave(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		plain, _ := openLanes(t, s, frontier.Policy{HostRate: 0.5, HostBurst: 2})
		if _, err := plain.Enqueue(ctx, []frontier.Item{{URL: "http://a/1", Depth: 1}, {URL: "http://a/2", Depth: 1}}); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Render.TakeToken(ctx, "a", 0); err != nil {
			t.Fatalf("the first token of a full bucket: %v", err)
		}
		x, err := plain.Exchange(ctx, nil, nil, 2)
		if err != nil || len(x.Popped) != 1 {
			t.Fatalf("pop after one token taken from a burst of 2: %d URLs, %v; want 1", len(x.Popped), err)
		}
		_, err = plain.Render.TakeToken(ctx, "a", 0)
		var no *rendering.NoTokenError
		// Two tokens taken at 0.5/s: the next slot is 4 s on, and its
		// window (burst 2: early by 2 s) opens 2 s on: ask again then, not
		// at once (the hint that asked again each millisecond).
		if !errors.As(err, &no) || no.Retry < 1500*time.Millisecond || no.Retry > 2*time.Second {
			t.Fatalf("a token of a spent bucket: %v; want a NoTokenError with a retry when the next window opens (2 s)", err)
		}
	})
}
