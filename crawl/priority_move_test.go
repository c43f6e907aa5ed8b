package crawl_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/redistest"
)

// seed --priority 9 of a URL already queued while two workers crawl its
// host moves it: it is fetched once, among the next few requests after
// the seed returns, and the crawl's counts are those of one URL (the
// crawl ends); seeded again at the same priority, it is not queued twice
// either.
func TestAQueuedURLGivenAPriorityIsMovedNotQueuedTwice(t *testing.T) {
	wholeCrawl(t)
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		var mu sync.Mutex
		var order []string
		started := make(chan struct{}, 1)
		site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				http.NotFound(w, r)
				return
			}
			mu.Lock()
			if order = append(order, r.URL.Path); len(order) == 3 {
				started <- struct{}{}
			}
			mu.Unlock()
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<p>a page</p>")
		}))
		defer site.Close()
		set := settings.Default()
		set.Rate, set.Burst, set.AllowPrivate = 10, 1, true
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.FollowWallClock(t)
		var seeds []*url.URL
		for i := range 40 {
			u, _ := url.Parse(fmt.Sprintf("%s/p/%d", site.URL, i))
			seeds = append(seeds, u)
		}
		if _, err := admin.Seed(ctx, s.Client, "prio", set, seeds); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			runWorkers(t, ctx, s, "prio", fastOptions("w1"), fastOptions("w2"))
		}()
		<-started
		urgent, _ := url.Parse(site.URL + "/p/35")
		sd, err := admin.NewSeeder(ctx, s.Client, "prio", set, admin.SeedOptions{Priority: 9})
		if err != nil {
			t.Fatal(err)
		}
		if err := sd.Add(ctx, []*url.URL{urgent}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		at := len(order)
		mu.Unlock()
		if rep := sd.Report(); rep.Moved != 1 || rep.Queued != 1 {
			t.Errorf("seed report %+v; want the URL moved", rep)
		}
		// Seeded again at its priority: still one.
		again, err := admin.NewSeeder(ctx, s.Client, "prio", set, admin.SeedOptions{Priority: 9})
		if err != nil {
			t.Fatal(err)
		}
		if err := again.Add(ctx, []*url.URL{urgent}); err != nil {
			t.Fatal(err)
		}
		<-done
		mu.Lock()
		defer mu.Unlock()
		n, first := 0, -1
		for i, p := range order {
			if p == "/p/35" {
				n++
				if first < 0 {
					first = i
				}
			}
		}
		if n != 1 {
			t.Fatalf("/p/35 fetched %d times; want once", n)
		}
		if first > at+3 {
			t.Errorf("/p/35 was request %d, %d after the seed returned; want among the next few", first+1, first-at)
		}
		if len(order) != 40 {
			t.Errorf("%d requests for 40 URLs", len(order))
		}
		st, err := status.Read(ctx, s.Client, "prio")
		if err != nil || !st.Done || st.Frontier.Queued != 0 {
			t.Errorf("status: %v\n%s; want done, nothing queued", err, st)
		}
	})
}
