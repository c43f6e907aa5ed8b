package crawl_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/redistest"
)

// trapSite is a site of 5 000 ordinary pages, each tenth of which links to
// three traps: an infinite calendar (/cal/YEAR/MONTH/, every month linking
// to the next and the one before), a path that repeats itself (/rep/,
// linking "rep/" relative to itself), and a query explosion (/shop?c=1,
// each page linking three variants with one more parameter).
func trapSite(t *testing.T) (*httptest.Server, func() map[string]int) {
	var mu sync.Mutex
	fetched := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		kind := "page"
		switch {
		case strings.HasPrefix(p, "/cal/"):
			kind = "calendar"
		case strings.HasPrefix(p, "/rep/"):
			kind = "repeat"
		case p == "/shop":
			kind = "query"
		}
		mu.Lock()
		fetched[kind]++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		link := func(href string) { fmt.Fprintf(w, "<a href=%q>x</a>\n", href) }
		switch kind {
		case "calendar":
			var y, m int
			fmt.Sscanf(p, "/cal/%d/%d/", &y, &m)
			next, prev := time.Date(y, time.Month(m)+1, 1, 0, 0, 0, 0, time.UTC), time.Date(y, time.Month(m)-1, 1, 0, 0, 0, 0, time.UTC)
			link(fmt.Sprintf("/cal/%d/%d/", next.Year(), next.Month()))
			link(fmt.Sprintf("/cal/%d/%d/", prev.Year(), prev.Month()))
		case "repeat":
			link("rep/")
		case "query":
			n := len(r.URL.Query())
			for _, v := range []string{"a", "b", "c"} {
				link("/shop?" + r.URL.RawQuery + "&p" + strconv.Itoa(n+1) + "=" + v)
			}
		default:
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, "/p/"), ".html"))
			link(fmt.Sprintf("/p/%d.html", (n+1)%5000))
			link(fmt.Sprintf("/p/%d.html", (n*7+3)%5000))
			if n%10 == 0 {
				link("/cal/2026/11/")
				link("/rep/")
				link("/shop?c=1")
			}
		}
	}))
	return srv, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range fetched {
			out[k] = v
		}
		return out
	}
}

// With the default trap defences, a 3 000-page crawl of the trap site spends
// under 5 % of its pages inside the repeating path and the query
// explosion, and status counts the links it refused, by reason.
func TestTrapsCostLittleByDefault(t *testing.T) {
	s := redistest.Real(t)
	srv, fetched := trapSite(t)
	defer srv.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate, set.MaxPages = math.Inf(1), true, 3000
	seed, _ := url.Parse(srv.URL + "/p/0.html")
	if _, err := admin.Seed(context.Background(), s.Client, "traps", set, []*url.URL{seed}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w1, w2 := fastOptions("w1"), fastOptions("w2")
	w1.Concurrency, w2.Concurrency = 8, 8
	runWorkers(t, ctx, s, "traps", w1, w2)
	st, err := status.Read(ctx, s.Client, "traps")
	if err != nil {
		t.Fatal(err)
	}
	got := fetched()
	pages := st.Counters["pages"]
	inTraps := got["repeat"] + got["query"]
	t.Logf("%d pages: %d ordinary, %d calendar, %d repeating path, %d query explosion; refused links: path_repeat %d, query_params %d",
		pages, got["page"], got["calendar"], got["repeat"], got["query"],
		st.Counters["skipped_links:path_repeat"], st.Counters["skipped_links:query_params"])
	if pages != 3000 {
		t.Fatalf("%d pages; want the budget of 3000", pages)
	}
	if float64(inTraps) >= 0.05*float64(pages) {
		t.Errorf("%d of %d pages inside the repeating path and the query explosion; want under 5 %%", inTraps, pages)
	}
	if st.Counters["skipped_links:path_repeat"] == 0 || st.Counters["skipped_links:query_params"] == 0 {
		t.Errorf("refusals not counted: %v", st.Counters)
	}
	if !strings.Contains(st.String(), "path_repeat") {
		t.Errorf("status does not show the refusals:\n%s", st.String())
	}
}

// --deny and --allow steer a crawl: denied and not-allowed links are never
// fetched, and are counted by reason.
func TestFiltersSteerTheCrawl(t *testing.T) {
	s := redistest.Real(t)
	srv, fetched := trapSite(t)
	defer srv.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate, set.MaxPages = math.Inf(1), true, 300
	set.Deny = []string{`/cal/`}                            // no calendar
	set.Allow = []string{`/p/\d+\.html$`, `/cal/`, `/rep/`} // nor shop (not allowed)
	seed, _ := url.Parse(srv.URL + "/p/0.html")
	if _, err := admin.Seed(context.Background(), s.Client, "filters", set, []*url.URL{seed}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runWorkers(t, ctx, s, "filters", fastOptions("w1"))
	st, err := status.Read(ctx, s.Client, "filters")
	if err != nil {
		t.Fatal(err)
	}
	got := fetched()
	if got["calendar"] != 0 || got["query"] != 0 || got["page"] == 0 {
		t.Fatalf("fetched %v; want pages only: no calendar (denied), no shop (not allowed)", got)
	}
	if st.Counters["skipped_links:denied"] == 0 || st.Counters["skipped_links:not_allowed"] == 0 {
		t.Fatalf("counters %v; want denied and not_allowed links counted", st.Counters)
	}
}
