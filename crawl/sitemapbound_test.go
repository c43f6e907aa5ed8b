package crawl_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A host whose sitemap index lists 2,000 sitemaps of 5,000 URLs each (ten
// million URLs; the was 5·10⁹) under --max-pages-per-host 100: its
// queue never holds more than twice the cap, the crawl ends, the excess is
// counted, and a real Redis grows by a few megabytes, not by the index.
// On miniredis the sitemaps hold 500 URLs each (miniSitemaps).
func TestASitemapIndexWithoutEndFillsNoQueue(t *testing.T) {
	wholeCrawl(t)
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		perSitemap := int64(5000)
		if s.Mini != nil {
			perSitemap /= miniSitemaps
		}
		sitemapCrawl(t, s, "index", 2000*perSitemap, perSitemap, 100)
	})
}

// miniSitemaps is how many times fewer URLs the sitemaps of the tests
// here list on miniredis than on redis-server. The bound is the same code
// on both (the Go that reads a sitemap, the scripts that queue or drop its
// links); what only the largest sizes show, Redis's memory, miniredis
// does not measure, and its Lua, interpreted in Go under the race
// detector, took most of the two tests' five minutes in CI.
const miniSitemaps = 10

// Sitemaps of every size a host may offer, from 1 URL to a million (as the
// protocol has them: an index of sitemaps of at most 50,000 each), under
// every cap from 1 to 1,000 pages a host: the host's queue never holds more
// than twice the cap (and the URLs in flight, which come back to it), the
// crawl ends with every URL crawled or counted as past the cap, and a real
// Redis grows by no more than the cap's worth. The sizes are drawn
// log-uniformly by a seeded schedule (both ends always in it), a crawl
// each, on both Redis kinds (on miniredis a tenth of each: miniSitemaps).
func TestASitemapOfAnySizeFillsNoQueuePastTheCap(t *testing.T) {
	wholeCrawl(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("schedule seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	type draw struct{ urls, hostCap int64 }
	schedule := []draw{{1, 1}, {1_000_000, 1000}, {1_000_000, 1}}
	for range 4 {
		schedule = append(schedule, draw{int64(math.Pow(10, 6*rng.Float64())), 1 + rng.Int64N(1000)})
	}
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		for i, d := range schedule {
			urls := d.urls
			if s.Mini != nil {
				urls = max(1, urls/miniSitemaps)
			}
			sitemapCrawl(t, s, fmt.Sprintf("any%d", i), urls, 50_000, d.hostCap)
		}
	})
}

// sitemapCrawl crawls a host whose sitemap index lists sitemaps of up to
// perSitemap of urls page URLs in all, under --max-pages-per-host hostCap,
// and checks what the tests above say.
func sitemapCrawl(t *testing.T, s *redistest.Server, name string, urls, perSitemap, hostCap int64) {
	t.Helper()
	sitemaps := (urls + perSitemap - 1) / perSitemap
	var srv *httptest.Server
	var requests atomic.Int64
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
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
			var i int64
			fmt.Sscanf(p, "/sm-%d.xml", &i)
			b.WriteString("<urlset>")
			for j := i * perSitemap; j < min(urls, (i+1)*perSitemap); j++ {
				fmt.Fprintf(&b, "<url><loc>%s/p/%d</loc></url>", srv.URL, j)
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
	set := settings.Default()
	set.Rate, set.AllowPrivate, set.MaxPagesPerHost = math.Inf(1), true, hostCap
	// A crawl of a million URLs takes a minute alone and twice that beside
	// other packages' tests under the race detector: the test fails on a
	// crawl that stopped (no request for a minute), not on a slow one.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ctx, unwatch := stallGuard(ctx, time.Minute, requests.Load)
	defer unwatch()
	before := usedMemory(ctx, s)
	sd, err := admin.NewSeeder(ctx, s.Client, name, set, admin.SeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	index, _ := url.Parse(srv.URL + "/index.xml")
	if err := sd.AddSitemaps(ctx, []*url.URL{index}); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	most := make(chan [2]int64)
	stop := make(chan struct{})
	go func() { // the host's queue and the URLs in flight, sampled as the crawl goes
		var m, held int64
		k := keyspace.KeysFor(name)
		for {
			select {
			case <-stop:
				most <- [2]int64{m, held}
				return
			case <-time.After(20 * time.Millisecond):
			}
			n, _ := s.Client.HGet(ctx, k.Lengths, host).Int64()
			l, _ := s.Client.ZCard(ctx, k.Leases).Result()
			m, held = max(m, n), max(held, l)
		}
	}()
	runWorkers(t, ctx, s, name, fastOptions("w1"))
	close(stop)
	what := fmt.Sprintf("%d URLs in %d sitemaps, cap %d", urls, sitemaps, hostCap)
	mh := <-most
	m, held := mh[0], mh[1]
	// New links are queued while the host's queue and pages stay under
	// twice the cap; a URL in flight is in neither, and goes back to the
	// queue's front whatever the cap when its lease expires (a slow
	// machine: a sitemap of 50,000 URLs is an exchange of seconds) or it
	// is put back. So the queue holds at most twice the cap and what was
	// in flight (leases last 2 s here: each was sampled while held).
	if m > 2*hostCap+held {
		t.Errorf("%s: the host's queue held %d URLs, with at most %d in flight", what, m, held)
	}
	st, err := status.Read(ctx, s.Client, name)
	if err != nil || !st.Done {
		t.Fatalf("%s: status: %v\n%s; want done", what, err, st)
	}
	// The cap is reached when the host has more. (The index and its
	// sitemaps are pages of the host too; URLs handed out before the cap
	// is reached still go, so pages may pass it: see --max-pages-per-host's
	// help.)
	pages, past := st.Counters["pages"], st.Counters["skipped_links:max_pages_per_host"]
	if pages < min(hostCap, urls+sitemaps+1) || (pages < urls+sitemaps+1 && past == 0) {
		t.Errorf("%s: %d pages, %d counted past the cap; want the cap's %d or every page, the rest counted", what, pages, past, hostCap)
	}
	grew := usedMemory(ctx, s) - before
	if s.Mini == nil && grew > 100<<20 {
		t.Errorf("%s: Redis grew by %d MiB", what, grew>>20)
	}
	t.Logf("%s: the queue at most %d (in flight at most %d), %d pages, %d links not queued past the cap, Redis +%d KiB", what, m, held, pages, past, grew>>10)
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
