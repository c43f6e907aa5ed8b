package crawl_test

import (
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
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/redistest"
)

// Pages that declare one canonical: session-id and parameter-order
// variants of /a naming it in their heads, a PDF variant naming /doc.pdf
// in a Link header, and /self naming itself. With --canonical skip each
// canonical is fetched and archived once, the variants are fetched once
// each, archived never, their records say duplicate_of and their own
// links are not followed (the canonical's are); with the default
// (record), every page is archived and followed as its own, its record
// naming its canonical.
func TestCanonicalSkipFetchesAndArchivesEachCanonicalOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		var mu sync.Mutex
		fetched := map[string]int{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			fetched[r.URL.RequestURI()]++
			mu.Unlock()
			html := func(head, body string) {
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprintf(w, `<html><head>%s</head><body>%s</body></html>`, head, body)
			}
			switch r.URL.Path {
			case "/a":
				if r.URL.RawQuery == "" {
					html(`<link rel="canonical" href="/a">`, `<a href="/from-a">x</a>`)
					return
				}
				html(`<title>v</title><link rel="canonical" href="http://`+r.Host+`/a">`, `<a href="/from-variant">x</a>`)
			case "/doc.pdf":
				w.Header().Set("Content-Type", "application/pdf")
				if r.URL.RawQuery != "" {
					w.Header().Add("Link", `</doc.pdf>; rel="canonical", </next>; rel=next`)
				}
				fmt.Fprint(w, "%PDF-1.4")
			case "/self":
				html(`<link rel=canonical href="/self">`, "")
			default:
				html("", "")
			}
		}))
		defer srv.Close()
		variants := []string{"/a?sid=1", "/a?sid=2", "/a?b=2&a=1", "/a?a=1&b=2", "/doc.pdf?v=1", "/doc.pdf?v=2"}
		var seeds []*url.URL
		for _, p := range append([]string{"/self"}, variants...) {
			u, _ := url.Parse(srv.URL + p)
			seeds = append(seeds, u)
		}
		for _, mode := range []string{settings.CanonicalSkip, settings.CanonicalRecord} {
			mu.Lock()
			clear(fetched)
			mu.Unlock()
			name := "canon-" + mode
			set := settings.Default()
			set.Rate, set.AllowPrivate, set.Canonical = math.Inf(1), true, mode
			set.KeepTypes = []string{"text/html", "application/pdf"}
			archived, recs := archivedCrawl(t, s, name, set, seeds)
			st, err := status.Read(context.Background(), s.Client, name)
			if err != nil {
				t.Fatal(err)
			}
			skip := mode == settings.CanonicalSkip
			for _, p := range []string{"/a", "/doc.pdf", "/self"} {
				if fetched[p] != 1 || archived[srv.URL+p] != 1 || recs[srv.URL+p].Canonical != "" {
					t.Errorf("%s: %s fetched %d times, archived %d; record's canonical %q; want once, once, none",
						mode, p, fetched[p], archived[srv.URL+p], recs[srv.URL+p].Canonical)
				}
			}
			for _, p := range variants {
				rec, want := recs[srv.URL+p], srv.URL+"/a"
				if p[1] == 'd' {
					want = srv.URL + "/doc.pdf"
				}
				dupOf, warc := "", 1
				if skip {
					dupOf, warc = want, 0
				}
				if fetched[p] != 1 || rec.Canonical != want || rec.DuplicateOf != dupOf || archived[srv.URL+p] != warc || (rec.WARC != nil) != (warc == 1) {
					t.Errorf("%s: %s fetched %d times, archived %d; record canonical %q, duplicate_of %q, warc %v; want once, %d, %q, %q",
						mode, p, fetched[p], archived[srv.URL+p], rec.Canonical, rec.DuplicateOf, rec.WARC, warc, want, dupOf)
				}
			}
			if fetched["/from-a"] != 1 || (fetched["/from-variant"] == 1) == skip {
				t.Errorf("%s: the canonical's link fetched %d times, the variants' %d; want once, and the variants' only when recorded",
					mode, fetched["/from-a"], fetched["/from-variant"])
			}
			if want := map[bool]int64{true: int64(len(variants)), false: 0}[skip]; st.Counters[crawl.CounterDuplicates] != want || skip != strings.Contains(st.String(), "duplicate_of") {
				t.Errorf("%s: %d duplicates counted; want %d, and status saying so when there are:\n%s", mode, st.Counters[crawl.CounterDuplicates], want, st)
			}
		}
	})
}
