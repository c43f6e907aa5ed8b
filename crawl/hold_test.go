package crawl_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A crawl paused mid-way (crawler pause, from within the site's fifth
// request): once the pages in flight are finished, the site sees no
// request while it stays paused, status says so and who, the two
// --exit-when-done workers keep running; resumed, the crawl finishes with
// every page fetched once, and the event log has both.
func TestAPausedCrawlFetchesNothingUntilResumed(t *testing.T) {
	wholeCrawl(t)
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pauseErr := make(chan error, 1)
		site := newPageSite(t, 0, func(n int64) {
			if n == 5 {
				_, err := admin.Pause(ctx, s.Client, "held", "alice")
				pauseErr <- err
			}
		})
		set := settings.Default()
		// 20 requests a second: the pause comes with most of the site still
		// queued, and the rest is crawled in two seconds, not forty at the
		// default of one.
		set.AllowPrivate, set.Rate = true, 20
		seeds := site.seeds(40)
		if _, err := admin.Seed(ctx, s.Client, "held", set, seeds); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			runWorkers(t, ctx, s, "held", fastOptions("w1"), fastOptions("w2"))
		}()
		if err := <-pauseErr; err != nil {
			t.Fatal(err)
		}
		// The pages in flight at the pause finish, and the URLs waiting in
		// the workers' buffers go back: nothing is held any more.
		var st *status.Status
		for {
			var err error
			if st, err = status.Read(ctx, s.Client, "held"); err != nil {
				t.Fatal(err)
			}
			if st.Frontier.InFlight == 0 || ctx.Err() != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if st.Hold == nil || st.Hold.By != "alice" || !strings.Contains(st.String(), "paused since") {
			t.Fatalf("status while paused: hold %+v\n%s", st.Hold, st)
		}
		before := site.requests.Load()
		time.Sleep(time.Second) // a window in which nothing may happen
		if n := site.requests.Load(); n != before {
			t.Fatalf("%d requests reached the site while the crawl was paused", n-before)
		}
		select {
		case <-done:
			t.Fatal("the --exit-when-done workers ended while the crawl was paused")
		default:
		}
		if _, err := admin.Resume(ctx, s.Client, "held", "bob"); err != nil {
			t.Fatal(err)
		}
		<-done
		site.onceEach(t, exportedByURL(t, ctx, s.Client, "held"), seeds)
		st, err := status.Read(ctx, s.Client, "held")
		if err != nil {
			t.Fatal(err)
		}
		var kinds []string
		for _, e := range st.Events {
			kinds = append(kinds, e.Kind)
		}
		if got := strings.Join(kinds, " "); !strings.Contains(got, "resume") || !strings.Contains(got, "hold") || st.Hold != nil {
			t.Errorf("events %q, hold %+v; want the pause and the resume logged, and no pause left", got, st.Hold)
		}
	})
}
