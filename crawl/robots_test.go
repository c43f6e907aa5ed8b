package crawl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redcrawl/crawler/politeness"
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
		set := settings.Default()
		set.Rate, set.AllowPrivate, set.RobotsGiveUp = math.Inf(1), true, time.Second
		var seeds []*url.URL
		for i := 0; i < 5; i++ {
			u, _ := url.Parse(fmt.Sprintf("%s/page/%d", srv.URL, i))
			seeds = append(seeds, u)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.Seed(ctx, s.Client, "down", set, seeds); err != nil {
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
		failed := s.Client.LRange(ctx, keyspace.KeysFor("down").Failed, 0, -1).Val()
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

// A robots.txt the old parser refused whole (a rule and a Crawl-delay
// before any User-agent) disallowed the whole host: only /robots.txt was
// fetched. Read line by line, its group applies: /page is fetched,
// /secret is not ('#' starts a comment anywhere), and the day-long
// Crawl-delay is held to the cap, which status says.
func TestRobotsTxtReadAsTheRFCDoes(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		var fetched sync.Map
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fetched.Store(r.URL.Path, true)
			if r.URL.Path == "/robots.txt" {
				fmt.Fprint(w, "Disallow: /page\nCrawl-delay: 5\n\nUser-agent: *\nCrawl-delay: 86400\nDisallow: /secret#private\n")
				return
			}
			fmt.Fprint(w, "<html><body>hello</body></html>")
		}))
		defer srv.Close()
		set := settings.Default()
		set.AllowPrivate = true
		var seeds []*url.URL
		// /secret/x first: a URL queued after /page would wait the minute
		// for its host's next token before it is found disallowed (a pop
		// takes the token); found disallowed first, its token goes back.
		for _, p := range []string{"/secret/x", "/page"} {
			u, _ := url.Parse(srv.URL + p)
			seeds = append(seeds, u)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.Seed(ctx, s.Client, "rfc", set, seeds); err != nil {
			t.Fatal(err)
		}
		w, err := crawl.NewWorker(ctx, s.Client, "rfc", fastOptions("w1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Run(ctx); err != nil || ctx.Err() != nil {
			t.Fatalf("Run: %v (context: %v)", err, ctx.Err())
		}
		if _, ok := fetched.Load("/page"); !ok {
			t.Error("/page was not fetched: the robots.txt was not read line by line")
		}
		if _, ok := fetched.Load("/secret/x"); ok {
			t.Error("/secret/x was fetched: 'Disallow: /secret#private' was not read as /secret")
		}
		st, err := status.Read(ctx, s.Client, "rfc")
		if err != nil {
			t.Fatal(err)
		}
		if st.Counters[crawl.CounterDelayCapped] != 1 || !strings.Contains(st.String(), "Crawl-delay over 1m0s") {
			t.Errorf("status does not say the Crawl-delay was capped: %v\n%s", st.Counters, st)
		}
	})
}

// URLs popped while their host's robots.txt is being fetched wait for it,
// in both workers, past their tokens' times. When it comes, the ones too
// late go back rather than all go at once: no second holds more requests
// than rate + burst, and every URL is fetched once.
func TestASlowRobotsTxtBunchesNoRequests(t *testing.T) {
	wholeCrawl(t)
	s := redistest.Real(t)
	site := newPageSite(t, 1500*time.Millisecond, nil) // a slow server: its robots.txt takes 1.5 s
	set := settings.Default()
	set.Rate, set.Burst, set.AllowPrivate = 5, 1, true
	seeds := site.seeds(24)
	seedAndCrawl(t, s, "slowrobots", set, seeds...)
	site.onceEach(t, exportedByURL(t, context.Background(), s.Client, "slowrobots"), seeds)
	site.mu.Lock()
	defer site.mu.Unlock()
	arrivals := site.arrivals
	sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].Before(arrivals[j]) })
	if most := testsite.MaxInWindow(arrivals, time.Second); most > 6 {
		t.Errorf("%d requests reached the host within one second; rate + burst is 6", most)
	}
}

// At a high rate, the URLs a worker's loops took while their host's
// robots.txt came (200 ms, against a token's window of 10 ms) missed their
// windows; their host, far from spent, gives each a new token in the
// worker's next exchange (frontier.Lease.Late) and they are fetched, not
// put back: before,
// every one went back, and a worker's first URLs of each new host were
// the most of a fast crawl's put-backs.
func TestURLsThatWaitedForRobotsTxtGetNewTokens(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := newPageSite(t, 200*time.Millisecond, nil)
		set := settings.Default()
		set.Rate, set.Burst, set.AllowPrivate = 100_000, 1000, true
		seeds := site.seeds(24)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.Seed(ctx, s.Client, "robotswait", set, seeds); err != nil {
			t.Fatal(err)
		}
		o := fastOptions("w1")
		o.Concurrency = 8
		w, err := crawl.NewWorker(ctx, s.Client, "robotswait", o)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Run(ctx); err != nil {
			t.Fatal(err)
		}
		site.onceEach(t, exportedByURL(t, ctx, s.Client, "robotswait"), seeds)
		if late, re, back := w.Counters.Late.Load(), w.Counters.Retokened.Load(), w.Counters.PutBack.Load(); late != 0 || back != 0 || re == 0 {
			t.Errorf("%d URLs went back late, %d put back in all, %d given new tokens; want none back, and the URLs that waited for robots.txt given new tokens", late, back, re)
		}
	})
}

// A Crawl-delay learnt after the pop holds for the URLs popped before it:
// with no crawl rate, a pop hands a worker several URLs of the host at
// once; its robots.txt then says one request a second, the first URL goes
// and the others go back through the exchanger, each fetched once, a
// second or more after the one before.
func TestACrawlDelayLearntAfterThePopHoldsForItsURLs(t *testing.T) {
	wholeCrawl(t)
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		var mu sync.Mutex
		var at []time.Time
		reqs := map[string]int{}
		site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/robots.txt" {
				fmt.Fprint(w, "User-agent: *\nCrawl-delay: 1\n")
				return
			}
			mu.Lock()
			at = append(at, time.Now())
			reqs[r.URL.Path]++
			mu.Unlock()
			w.Header().Set("Content-Type", "text/html")
			if r.URL.Path == "/" {
				fmt.Fprint(w, `<a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>`)
			}
		}))
		defer site.Close()
		set := settings.Default()
		set.Rate, set.AllowPrivate = math.Inf(1), true
		seed, _ := url.Parse(site.URL + "/")
		if _, err := admin.Seed(context.Background(), s.Client, "delay-late", set, []*url.URL{seed}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		runWorkers(t, ctx, s, "delay-late", fastOptions("w"))
		mu.Lock()
		defer mu.Unlock()
		if len(reqs) != 4 || reqs["/"] != 1 || reqs["/a"] != 1 || reqs["/b"] != 1 || reqs["/c"] != 1 {
			t.Fatalf("requests %v; want each page once", reqs)
		}
		// The site's clock, a request's arrival: no more requests in any
		// span than a bucket of one request a second gives, its tokens'
		// windows counted (politeness.TokenWindow: a request may go up to
		// half an interval after its token's time, never before it), whatever
		// the load (10 ms for the clocks' grain). Consecutive requests may
		// so be less than a second apart when the first went late (under
		// the race detector, 936 ms was seen), but two never share a
		// second's token, and k+1 requests never fit in k-1 seconds.
		_, width := politeness.TokenWindow(1, 1)
		for i := range at {
			for j := i + 1; j < len(at); j++ {
				span := at[j].Sub(at[i]) + 10*time.Millisecond
				if allowed := math.Ceil((span + width).Seconds() - 1e-9); float64(j-i+1) > allowed {
					t.Errorf("requests %d to %d in %v, where a Crawl-delay of 1 s allows %.0f (token window %v)", i+1, j+1, span, allowed, width)
				}
			}
		}
	})
}
