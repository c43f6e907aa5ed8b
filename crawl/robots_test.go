package crawl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A host whose robots.txt keeps answering 503 has its URLs held back, not
// dropped as "disallowed"; after the crawl's give-up time they go to the
// failed list with a reason that names robots.txt as unreachable.
func TestRobotsUnreachableGivesUpAsFailed(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		var pages, robots atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				robots.Add(1)
				http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
				return
			}
			pages.Add(1)
			fmt.Fprint(w, "<html><body>hello</body></html>")
		}))
		defer srv.Close()
		set := crawl.DefaultSettings()
		set.Rate, set.AllowPrivate, set.RobotsGiveUp = math.Inf(1), true, time.Second
		var seeds []*url.URL
		for i := 0; i < 5; i++ {
			u, _ := url.Parse(fmt.Sprintf("%s/page/%d", srv.URL, i))
			seeds = append(seeds, u)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := crawl.Seed(ctx, s.Client, "down", set, seeds); err != nil {
			t.Fatal(err)
		}
		w, err := crawl.NewWorker(ctx, s.Client, "down", fastOptions("w1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Run(ctx); err != nil || ctx.Err() != nil {
			t.Fatalf("Run: %v (context: %v)", err, ctx.Err())
		}
		if pages.Load() != 0 || robots.Load() < 2 {
			t.Fatalf("%d pages and %d robots.txt fetched; want none, and robots.txt tried again", pages.Load(), robots.Load())
		}
		failed := s.Client.LRange(ctx, frontier.KeysFor("down").Failed, 0, -1).Val()
		if len(failed) != len(seeds) {
			t.Fatalf("failed list %v; want the %d URLs", failed, len(seeds))
		}
		for _, f := range failed {
			var it frontier.Item
			json.Unmarshal([]byte(f), &it)
			if !strings.Contains(it.Err, "robots.txt unreachable") || !strings.Contains(it.Err, "HTTP 503") || strings.Contains(it.Err, "disallowed") {
				t.Errorf("failed %s: %q; want robots.txt unreachable (HTTP 503), never disallowed", it.URL, it.Err)
			}
		}
	})
}
