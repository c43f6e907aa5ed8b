package crawl_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A host whose sitemap index lists 2,000 sitemaps of 5,000 URLs each (ten
// million URLs; the was 5·10⁹) under --max-pages-per-host 100: its
// queue never holds more than twice the cap, the crawl ends, the excess is
// counted, and a real Redis grows by a few megabytes, not by the index.
func TestASitemapIndexWithoutEndFillsNoQueue(t *testing.T) {
	wholeCrawl(t)
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		const sitemaps, perSitemap, hostCap = 2000, 5000, 100
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var b strings.Builder
			switch p := r.URL.Path; {
			case p == "/robots.txt":
				http.NotFound(w, r)
				return
			case p == "/index.xml":
				b.WriteString("<sitemapindex>")
				for i := range sitemaps {
					fmt.Fprintf(&b, "<sitemap><loc>%s/sm-%d.xml</loc></sitemap>", srv.URL, i)
				}
				b.WriteString("</sitemapindex>")
			case strings.HasPrefix(p, "/sm-"): // at the root: the location rule allows its URLs
				b.WriteString("<urlset>")
				for i := range perSitemap {
					fmt.Fprintf(&b, "<url><loc>%s/p%s/%d</loc></url>", srv.URL, strings.TrimSuffix(p[4:], ".xml"), i)
				}
				b.WriteString("</urlset>")
			default:
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, "<p>a page</p>")
				return
			}
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, b.String())
		}))
		defer srv.Close()
		set := crawl.DefaultSettings()
		set.Rate, set.AllowPrivate, set.MaxPagesPerHost = math.Inf(1), true, hostCap
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		before := usedMemory(ctx, s)
		sd, err := crawl.NewSeeder(ctx, s.Client, "index", set, crawl.SeedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		index, _ := url.Parse(srv.URL + "/index.xml")
		if err := sd.AddSitemaps(ctx, []*url.URL{index}); err != nil {
			t.Fatal(err)
		}
		host := strings.TrimPrefix(srv.URL, "http://")
		most := make(chan int64)
		stop := make(chan struct{})
		go func() { // the host's queue, sampled as the crawl goes
			var m int64
			for {
				select {
				case <-stop:
					most <- m
					return
				case <-time.After(20 * time.Millisecond):
				}
				n, _ := s.Client.HGet(ctx, frontier.KeysFor("index").Lengths, host).Int64()
				m = max(m, n)
			}
		}()
		runWorkers(t, ctx, s, "index", fastOptions("w1"))
		close(stop)
		if m := <-most; m > 2*hostCap {
			t.Errorf("the host's queue held %d URLs under a cap of %d pages", m, hostCap)
		}
		st, err := crawl.ReadStatus(ctx, s.Client, "index")
		if err != nil || !st.Done || st.Counters["skipped_links:max_pages_per_host"] == 0 {
			t.Fatalf("status: %v\n%s; want done, the excess counted", err, st)
		}
		if grew := usedMemory(ctx, s) - before; s.Mini == nil && grew > 100<<20 {
			t.Errorf("Redis grew by %d MiB", grew>>20)
		}
		t.Logf("%d pages, %d links not queued past the cap, Redis +%d KiB", st.Counters["pages"], st.Counters["skipped_links:max_pages_per_host"],
			(usedMemory(ctx, s)-before)>>10)
	})
}

// usedMemory is a real Redis's used_memory (0 for miniredis).
func usedMemory(ctx context.Context, s *redistest.Server) int64 {
	if s.Mini != nil {
		return 0
	}
	var n int64
	for _, line := range strings.Split(s.Client.Info(ctx, "memory").Val(), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			fmt.Sscan(v, &n)
		}
	}
	return n
}
