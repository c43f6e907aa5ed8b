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

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/dupset"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A site of 60 pages (internal/dupset.Triples): 20 articles, a near copy
// of each (another date line, 2 to 4 words, another banner) and 20
// different articles, all with the site's navigation and footer, each
// linking to a page of its own (/from/...). With --near-duplicates mark,
// at least 18 of the 20 pairs are found (the copy marked a near duplicate
// of its article, or the article of its copy, whichever was fetched
// later), and no page is marked a near duplicate of any page but its
// pair's; with skip, the same, and a marked page is not in the WARC files
// while every other page is; in both, every page's own link is followed,
// and status counts the marked pages. Skip is set live (crawler set) on
// a crawl seeded without it.
func TestNearCopiesAreMarkedOrSkipped(t *testing.T) {
	wholeCrawl(t)
	pages := dupset.Triples(56, 20)
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		var mu sync.Mutex
		fetched := map[string]int{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			fetched[r.URL.Path]++
			mu.Unlock()
			page, ok := pages[r.URL.Path]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "text/html")
			w.Write(bytes.Replace(page, []byte("</footer>"), []byte(`</footer><a href="/from`+r.URL.Path+`">on</a>`), 1))
		}))
		defer srv.Close()
		var seeds []*url.URL
		for p := range pages {
			u, _ := url.Parse(srv.URL + p)
			seeds = append(seeds, u)
		}
		for _, mode := range []string{settings.NearMark, settings.NearSkip} {
			mu.Lock()
			clear(fetched)
			mu.Unlock()
			name := "near-" + mode
			set := settings.Default()
			set.Rate, set.AllowPrivate, set.MaxDepth = math.Inf(1), true, 1
			if mode == settings.NearSkip { // seeded off, and set live (crawler set) before its workers start
				if _, err := admin.Seed(context.Background(), s.Client, name, set, seeds[:1]); err != nil {
					t.Fatal(err)
				}
				if _, err := admin.SetSettings(context.Background(), s.Client, name, map[string]string{"near-duplicates": mode}, "test"); err != nil {
					t.Fatal(err)
				}
			}
			set.NearDuplicates = mode
			archived, recs := archivedCrawl(t, s, name, set, seeds)
			pairOf := func(p string) string { // the page's pair, "" for an other
				kind, i, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
				switch kind {
				case "article":
					return srv.URL + "/copy/" + i
				case "copy":
					return srv.URL + "/article/" + i
				}
				return ""
			}
			found, marked := 0, 0
			for p := range pages {
				rec := recs[srv.URL+p]
				if rec.Status != http.StatusOK || fetched["/from"+p] != 1 {
					t.Errorf("%s: %s status %d, its link fetched %d times; want 200, once", mode, p, rec.Status, fetched["/from"+p])
				}
				if rec.NearDuplicateOf == "" {
					if archived[srv.URL+p] != 1 {
						t.Errorf("%s: %s, not marked, archived %d times; want once", mode, p, archived[srv.URL+p])
					}
					continue
				}
				marked++
				if rec.NearDuplicateOf != pairOf(p) {
					t.Errorf("%s: %s marked a near duplicate of %s (similarity %.2f); its pair is %q", mode, p, rec.NearDuplicateOf, rec.NearSimilarity, pairOf(p))
					continue
				}
				found++
				if skip := mode == settings.NearSkip; skip != (archived[srv.URL+p] == 0) || skip != strings.HasPrefix(rec.NotArchived, "near duplicate of") {
					t.Errorf("%s: %s archived %d times, not_archived %q", mode, p, archived[srv.URL+p], rec.NotArchived)
				}
			}
			t.Logf("%s: %d of 20 pairs found, %d pages marked", mode, found, marked)
			if found < 18 {
				t.Errorf("%s: %d of the 20 pairs found; want at least 18", mode, found)
			}
			st, err := status.Read(context.Background(), s.Client, name)
			if err != nil {
				t.Fatal(err)
			}
			if n := st.Counters[crawl.CounterNearDuplicates]; n != int64(marked) || !strings.Contains(st.String(), fmt.Sprintf("near copies %d pages", marked)) ||
				!strings.Contains(st.String(), "near copies: "+mode) {
				t.Errorf("%s: status counts %d near duplicates; want %d, said:\n%s", mode, n, marked, st)
			}
		}
	})
}
