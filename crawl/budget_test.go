package crawl_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

// Every URL a crawl asked the site for has its record when a page budget
// ends it, also the ones that failed once (the test site's flaky pages
// answer 503 the first time) and were back in their host's queue for a
// retry when the budget ran out: while a hostile page that trickles
// holds its lease, the budget waits, retries come due and go back to the
// queues, and other hosts' URLs take the room left. Each such URL ends
// with a failed record saying the budget is spent. On one shard and on
// three. (Before: 3 of about 1 350 requested URLs had no record.)
func TestEveryURLTriedUnderABudgetHasARecord(t *testing.T) {
	wholeCrawl(t)
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, s *redistest.Server) {
				site, err := testsite.Start(testsite.Config{Hosts: 4, Pages: 1000})
				if err != nil {
					t.Fatal(err)
				}
				defer site.Close()
				set := settings.Default()
				set.Rate, set.AllowPrivate, set.MaxPages, set.Shards = math.Inf(1), true, 1500, shards
				srv := hostile()
				defer srv.Close()
				var seeds []*url.URL
				for _, r := range append(site.Roots(), srv.URL+"/") {
					u, _ := url.Parse(r)
					seeds = append(seeds, u)
				}
				s.FollowWallClock(t) // the scheduler's lock expires on miniredis too (a leader that lost it under load)
				if _, err := admin.Seed(context.Background(), s.Client, "budget-tried", set, seeds); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				var opts []crawl.Options
				for i := 0; i < 3; i++ {
					o := fastOptions(fmt.Sprint("w", i))
					o.Concurrency = 8
					fc := fetch.DefaultConfig()
					fc.Timeout = 3 * time.Second
					o.Fetch = &fc
					opts = append(opts, o)
				}
				runWorkers(t, ctx, s, "budget-tried", opts...)
				recorded := exportedByURL(t, ctx, s.Client, "budget-tried")
				var missing []string
				fetched := site.Stats().Fetched
				for _, u := range fetched {
					if _, ok := recorded[u]; !ok {
						missing = append(missing, u)
					}
				}
				if len(missing) > 0 {
					st, _ := status.Read(ctx, s.Client, "budget-tried")
					t.Logf("frontier %+v counters %v", st.Frontier, st.Counters)
					t.Fatalf("%d of the %d URLs requested from the site have no record: %v", len(missing), len(fetched), missing)
				}
				st, err := status.Read(ctx, s.Client, "budget-tried")
				if err != nil {
					t.Fatal(err)
				}
				if st.Counters["pages"] != 1500 || !st.Done || st.Counters["records"] != int64(len(recorded)) {
					t.Fatalf("pages %d, done %v, %d records counted for %d exported; want 1500, true, equal",
						st.Counters["pages"], st.Done, st.Counters["records"], len(recorded))
				}
			})
		})
	}
}

// A page whose fetch is in flight when the rest of the crawl reaches its
// page budget ends with a record, and in the workers' own --out files as
// well as the results stream (a `crawler crawl` with its embedded Redis
// has only its file): it trickles past its fetch's timeout, its retry
// finds the budget spent by the pages fetched meanwhile, and the sweep
// that ends it writes its record to the scheduler's --out too. Before,
// the file had 3 000 records of 3 001 pages requested. On one worker and
// on three, both Redis kinds.
func TestAPageInFlightAtTheBudgetsEndHasARecord(t *testing.T) {
	wholeCrawl(t)
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, s *redistest.Server) {
				var mu sync.Mutex
				requested := map[string]bool{}
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/robots.txt" {
						http.NotFound(w, r)
						return
					}
					mu.Lock()
					requested["http://"+r.Host+r.URL.Path] = true
					mu.Unlock()
					w.Header().Set("Content-Type", "text/html")
					switch {
					case r.URL.Path == "/":
						fmt.Fprint(w, `<a href="/slow">slow</a>`)
						for i := 0; i < 20; i++ {
							fmt.Fprintf(w, `<a href="/i/%d">i</a>`, i)
						}
					case strings.HasPrefix(r.URL.Path, "/i/"):
						for i := 0; i < 10; i++ {
							fmt.Fprintf(w, `<a href="%s/%d">p</a>`, r.URL.Path, i)
						}
					case r.URL.Path == "/slow": // a byte every second, past the fetch's timeout
						for i := 0; i < 10 && r.Context().Err() == nil; i++ {
							w.Write([]byte("<"))
							w.(http.Flusher).Flush()
							select {
							case <-r.Context().Done():
							case <-time.After(time.Second):
							}
						}
					}
				}))
				defer srv.Close()
				set := settings.Default()
				set.Rate, set.AllowPrivate, set.MaxPages = math.Inf(1), true, 150
				seed, _ := url.Parse(srv.URL + "/")
				s.FollowWallClock(t)
				if _, err := admin.Seed(context.Background(), s.Client, "budget-inflight", set, []*url.URL{seed}); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				outs := make([]bytes.Buffer, workers)
				var opts []crawl.Options
				for i := range workers {
					o := fastOptions(fmt.Sprint("w", i))
					fc := fetch.DefaultConfig()
					fc.Timeout = 2 * time.Second
					o.Fetch, o.Concurrency, o.Out = &fc, 8, &outs[i]
					opts = append(opts, o)
				}
				runWorkers(t, ctx, s, "budget-inflight", opts...)
				var all bytes.Buffer
				for i := range outs {
					all.Write(outs[i].Bytes())
				}
				for name, have := range map[string]map[string]crawl.Record{"the --out files": recordsByURL(t, all.String()),
					"the results stream": exportedByURL(t, ctx, s.Client, "budget-inflight")} {
					mu.Lock()
					for u := range requested {
						if _, ok := have[u]; !ok {
							t.Errorf("%s: no record of %s, which the site was asked for (%d requested, %d records)", name, u, len(requested), len(have))
						}
					}
					mu.Unlock()
					if rec := have[srv.URL+"/slow"]; rec.Outcome != crawl.OutcomeFailed || !strings.Contains(rec.Error, "budget") {
						t.Errorf("%s: /slow: %+v; want failed, not retried once the budget was spent", name, rec)
					}
				}
			})
		})
	}
}
