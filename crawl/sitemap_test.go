package crawl_test

import (
	"bytes"
	"compress/gzip"
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
	"github.com/redcrawl/crawler/internal/redistest"
)

// sitemapSite lists, in robots.txt, a sitemap index of a gzip'd sitemap
// and a plain one; they list ten pages no page links to, and one URL out
// of scope.
func sitemapSite(t *testing.T) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var hidden []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		urlset := func(from, to int) string {
			var b strings.Builder
			b.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for i := from; i <= to; i++ {
				fmt.Fprintf(&b, "<url><loc>%s/hidden/%d</loc></url>", srv.URL, i)
			}
			b.WriteString("<url><loc>http://elsewhere.invalid/x</loc></url></urlset>")
			return b.String()
		}
		switch p := r.URL.Path; {
		case p == "/robots.txt":
			fmt.Fprintf(w, "User-agent: *\nAllow: /\nSitemap: %s/sitemap_index.xml\n", srv.URL)
		case p == "/sitemap_index.xml":
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<sitemapindex><sitemap><loc>%s/sm1.xml.gz</loc></sitemap><sitemap><loc>/sm2.xml</loc></sitemap></sitemapindex>`, srv.URL)
		case p == "/sm1.xml.gz":
			w.Header().Set("Content-Type", "application/gzip")
			var b bytes.Buffer
			z := gzip.NewWriter(&b)
			z.Write([]byte(urlset(1, 5)))
			z.Close()
			w.Write(b.Bytes())
		case p == "/sm2.xml":
			w.Header().Set("Content-Type", "text/xml")
			fmt.Fprint(w, urlset(6, 10))
		case strings.HasPrefix(p, "/hidden/"):
			mu.Lock()
			hidden = append(hidden, p)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/html")
		default:
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<a href="/other">x</a>`)
		}
	}))
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), hidden...)
	}
}

func crawlSitemapSite(t *testing.T, name string, sitemaps bool, explicit bool) []string {
	t.Helper()
	s := redistest.Real(t)
	srv, hidden := sitemapSite(t)
	defer srv.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate, set.Sitemaps = math.Inf(1), true, sitemaps
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root, _ := url.Parse(srv.URL + "/")
	sd, err := admin.NewSeeder(ctx, s.Client, name, set, admin.SeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sd.Add(ctx, []*url.URL{root}); err != nil {
		t.Fatal(err)
	}
	if explicit {
		sm, _ := url.Parse(srv.URL + "/sm2.xml")
		if err := sd.AddSitemaps(ctx, []*url.URL{sm}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := crawl.NewWorker(ctx, s.Client, name, fastOptions("w1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	return hidden()
}

// The sitemaps robots.txt lists are read (an index, a gzip'd sitemap, a
// plain one), and their pages crawled though no page links to them; out
// of scope ones are not. With --sitemaps=false they are not read, and a
// sitemap given to seed is read anyway.
func TestSitemaps(t *testing.T) {
	if got := crawlSitemapSite(t, "sm-on", true, false); len(got) != 10 {
		t.Errorf("with sitemaps: %d hidden pages fetched (%v); want all 10", len(got), got)
	}
	if got := crawlSitemapSite(t, "sm-off", false, false); len(got) != 0 {
		t.Errorf("with --sitemaps=false: %d hidden pages fetched; want none", len(got))
	}
	if got := crawlSitemapSite(t, "sm-seed", false, true); len(got) != 5 {
		t.Errorf("with seed --sitemap sm2.xml: %d hidden pages fetched (%v); want its 5", len(got), got)
	}
}

// sitemaps.org's location rule: a sitemap at /catalog/sitemap.xml lists
// URLs under /catalog/ only; /outside-catalog-dir was fetched before. (A
// sitemap robots.txt lists is vouched for there: TestSitemaps.)
func TestSitemapLocationRule(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		var mu sync.Mutex
		fetched := map[string]bool{}
		var srv *httptest.Server
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			fetched[r.URL.Path] = true
			mu.Unlock()
			if r.URL.Path == "/catalog/sitemap.xml" {
				fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%[1]s/catalog/a</loc></url>`+
					`<url><loc>%[1]s/outside-catalog-dir</loc></url></urlset>`, srv.URL)
				return
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html><body>page</body></html>")
		}))
		defer srv.Close()
		set := settings.Default()
		set.Rate, set.AllowPrivate = math.Inf(1), true
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sd, err := admin.NewSeeder(ctx, s.Client, "smloc", set, admin.SeedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sm, _ := url.Parse(srv.URL + "/catalog/sitemap.xml")
		if err := sd.AddSitemaps(ctx, []*url.URL{sm}); err != nil {
			t.Fatal(err)
		}
		w, err := crawl.NewWorker(ctx, s.Client, "smloc", fastOptions("w1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Run(ctx); err != nil || ctx.Err() != nil {
			t.Fatalf("Run: %v, %v", err, ctx.Err())
		}
		mu.Lock()
		defer mu.Unlock()
		if !fetched["/catalog/a"] || fetched["/outside-catalog-dir"] {
			t.Fatalf("fetched %v; want /catalog/a and not /outside-catalog-dir", fetched)
		}
		st, err := status.Read(ctx, s.Client, "smloc")
		if err != nil || st.Counters["skipped_links:sitemap_location"] != 1 {
			t.Fatalf("status counters %v, %v; want the URL outside the sitemap's directory counted", st.Counters, err)
		}
	})
}
