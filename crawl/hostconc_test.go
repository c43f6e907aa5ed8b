package crawl_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A cap of requests in flight set while the crawl runs ('crawler set
// --host-concurrency 1'), two workers of 4 loops at --rate inf on a host
// whose pages take 150 ms: before it the host gets several requests at
// once; every request that starts from two seconds after the change on
// finds none other in flight. (The URLs the workers leased before the
// change hold no slot and go as they were popped: here they took about
// 0.9 s.) On both Redis kinds.
func TestACapOfRequestsInFlightSetMidCrawlHolds(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		type start struct {
			at   time.Time
			with int // requests in flight, this one counted
		}
		var mu sync.Mutex
		var starts []start
		inFlight := 0
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			switch r.URL.Path {
			case "/robots.txt":
				http.NotFound(w, r)
				return
			case "/":
				for i := range 100 {
					fmt.Fprintf(w, `<a href="/p/%d">p</a>`, i)
				}
				return
			}
			mu.Lock()
			inFlight++
			starts = append(starts, start{time.Now(), inFlight})
			mu.Unlock()
			time.Sleep(150 * time.Millisecond) // the page's time to answer, which the cap is about
			mu.Lock()
			inFlight--
			mu.Unlock()
		}))
		t.Cleanup(srv.Close)
		s.FollowWallClock(t)
		set := settings.Default()
		set.Rate, set.AllowPrivate = math.Inf(1), true
		root, _ := url.Parse(srv.URL + "/")
		if _, err := admin.Seed(context.Background(), s.Client, "conc", set, []*url.URL{root}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var changed time.Time
		done := make(chan struct{})
		go func() {
			defer close(done)
			awaitTrue(t, "8 page requests", func() bool { mu.Lock(); defer mu.Unlock(); return len(starts) >= 8 })
			if _, err := admin.SetSettings(ctx, s.Client, "conc", map[string]string{"host-concurrency": "1"}, "dave"); err != nil {
				t.Error(err)
			}
			changed = time.Now() // read after done is closed
		}()
		runWorkers(t, ctx, s, "conc", fastOptions("w1"), fastOptions("w2"))
		<-done
		mu.Lock()
		defer mu.Unlock()
		before, after, most := 0, 0, 0
		for _, st := range starts {
			switch {
			case st.at.Before(changed):
				before = max(before, st.with)
			case st.at.After(changed.Add(2 * time.Second)):
				after++
				most = max(most, st.with)
			}
		}
		t.Logf("%d requests; before the change up to %d at once; %d requests from 2 s after it, up to %d at once", len(starts), before, after, most)
		if before < 2 {
			t.Fatalf("the uncapped crawl never had 2 requests at once: the change shows nothing")
		}
		if after < 5 {
			t.Fatalf("%d requests from 2 s after the change; want enough to judge", after)
		}
		if most > 1 {
			t.Errorf("%d requests at once after the cap of 1 was set", most)
		}
		if len(starts) < 100 {
			t.Errorf("%d of the 100 pages fetched", len(starts))
		}
	})
}
