package crawl_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/redcrawl/crawler/internal/testsite"
)

// awaitTrue polls cond until it holds (the crawl's own state is the
// event; the bound only stops a broken test).
func awaitTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// since are the times at or after from and before to.
func since(times []time.Time, from, to time.Time) []time.Time {
	var out []time.Time
	for _, at := range times {
		if !at.Before(from) && at.Before(to) {
			out = append(out, at)
		}
	}
	return out
}

// A rate lowered mid-crawl ('crawler set --rate') holds for both workers
// within 2 s of the change's return, by the site's own clock: from then
// on no second holds more of the host's requests than the new rate and
// burst allow. Raised again, the host speeds up past the slow rate. Every
// page is fetched, both workers end on the last version, and the event
// log says what changed, from what, to what, and who asked.
func TestARateChangedMidCrawlHoldsForEveryWorker(t *testing.T) {
	wholeCrawl(t)
	s := redistest.Real(t)
	site, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 120, ListenBase: "127.0.0.110"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	set := settings.Default()
	set.Rate, set.Burst, set.AllowPrivate, set.ExpectedURLs = 20, 1, true, 10000
	seedSite(t, s, site, "live", set)
	host := site.Hosts()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var workers []*crawl.Worker
	for _, id := range []string{"w1", "w2"} {
		w, err := crawl.NewWorker(ctx, s.Client, "live", fastOptions(id))
		if err != nil {
			t.Fatal(err)
		}
		workers = append(workers, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				t.Errorf("worker %s: %v", id, err)
			}
		}()
	}
	awaitTrue(t, "20 requests at 20/s", func() bool { return len(site.Times(host)) >= 20 })

	rep, err := admin.SetSettings(ctx, s.Client, "live", map[string]string{"rate": "2"}, "alice")
	if err != nil || rep.Version != 1 || len(rep.Changes) != 1 {
		t.Fatalf("SetSettings(rate 2) = %+v, %v", rep, err)
	}
	slowed := time.Now()
	awaitTrue(t, "5 requests at 2/s", func() bool { return len(since(site.Times(host), slowed.Add(2*time.Second), time.Now())) >= 5 })

	if _, err := admin.SetSettings(ctx, s.Client, "live", map[string]string{"rate": "50", "burst": "5"}, "alice"); err != nil {
		t.Fatal(err)
	}
	raised := time.Now()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the workers did not finish in time")
	}
	for _, u := range site.Missing() {
		t.Errorf("not fetched: %s", u)
	}
	times := site.Times(host)
	// The change's effect: the last request after it that came closer to
	// the one before than the old spacing allows under the new rate.
	effect := time.Duration(0)
	after := since(times, slowed, raised)
	for i := 1; i < len(after); i++ {
		if after[i].Sub(after[i-1]) < 250*time.Millisecond {
			effect = after[i].Sub(slowed)
		}
	}
	t.Logf("lowered to 2/s: the last request at the old spacing came %v after the command returned", effect.Round(time.Millisecond))
	if effect > 2*time.Second {
		t.Errorf("requests at the old spacing went on %v after the rate was lowered; want within 2s", effect)
	}
	if n := testsite.MaxInWindow(since(times, slowed.Add(2*time.Second), raised), time.Second); n > 3 {
		t.Errorf("from 2 s after the rate was lowered to 2/s (burst 1), %d requests in one second; want at most 3", n)
	}
	if n := testsite.MaxInWindow(since(times, raised.Add(time.Second), time.Now()), time.Second); n <= 3 {
		t.Errorf("raised to 50/s, at most %d requests in a second; want more than the slow rate's 3", n)
	}
	for _, w := range workers {
		if v := w.Settings().Version; v != 2 {
			t.Errorf("a worker acts on settings version %d; want 2", v)
		}
	}
	st, err := status.Read(context.Background(), s.Client, "live")
	if err != nil {
		t.Fatal(err)
	}
	said := 0
	for _, e := range st.Events {
		if e.Kind == "settings" && strings.Contains(e.Text, "by alice") &&
			(strings.Contains(e.Text, "--rate 20 → 2") || strings.Contains(e.Text, "--rate 2 → 50") && strings.Contains(e.Text, "--burst 1 → 5")) {
			said++
		}
	}
	if said != 2 {
		t.Errorf("the event log says %d of the 2 changes:\n%+v", said, st.Events)
	}
}

// set refuses what seed would refuse, with seed's words; a setting fixed
// when the crawl was seeded, a new product token in the user agent, and a
// crawl that does not exist, each with its own error; nothing is written.
func TestSetRefusesWhatCannotChange(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		set := settings.Default()
		if _, err := settings.Store(ctx, s.Client, "fixed", set); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			given map[string]string
			is    error
			says  string
		}{
			{map[string]string{"burst": "0"}, crawl.ErrSettings, "burst 0: want 1 to 1000"},
			{map[string]string{"deny": "("}, crawl.ErrSettings, "--deny"},
			{map[string]string{"scope": "any"}, admin.ErrNotLive, "--scope"},
			{map[string]string{"shards": "4"}, admin.ErrNotLive, "--shards"},
			{map[string]string{"user-agent": "Other/1.0"}, crawl.ErrSettings, "product token"},
			{map[string]string{"nonsense": "1"}, crawl.ErrSettings, "not a setting"},
		} {
			_, err := admin.SetSettings(ctx, s.Client, "fixed", c.given, "bob")
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("SetSettings(%v) = %v; want %v saying %q", c.given, err, c.is, c.says)
			}
		}
		if got, _ := settings.Load(ctx, s.Client, "fixed"); got.Version != 0 || got.Burst != 1 {
			t.Fatalf("after refused changes: version %d, burst %d; want nothing written", got.Version, got.Burst)
		}
		if _, err := admin.SetSettings(ctx, s.Client, "none", map[string]string{"rate": "2"}, "bob"); !errors.Is(err, crawl.ErrNoCrawl) {
			t.Fatalf("a crawl that does not exist: %v; want ErrNoCrawl", err)
		}
	})
}

// A crawl that ended on its page budget goes on when the budget is raised
// ('crawler set --max-pages'): the workers, started again, fetch exactly
// the new budget's pages more, none of the first run's again (a flaky
// page's retry aside); lifted (0), the crawl goes on to the site's end. On one shard and on three, where the budget's
// shares are moved to the shards with work.
func TestARaisedBudgetReopensAnEndedCrawl(t *testing.T) {
	wholeCrawl(t)
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, s *redistest.Server) {
				site, err := testsite.Start(testsite.Config{Hosts: 3, Pages: 100, ListenBase: "127.0.0.120"})
				if err != nil {
					t.Fatal(err)
				}
				defer site.Close()
				set := settings.Default()
				set.Rate, set.AllowPrivate, set.MaxPages, set.Shards, set.ExpectedURLs = math.Inf(1), true, 30, shards, 10000
				seedSite(t, s, site, "more", set)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				runWorkers(t, ctx, s, "more", fastOptions("w1"), fastOptions("w2"))
				st, err := status.Read(ctx, s.Client, "more")
				if err != nil || st.Counters["pages"] != 30 || !st.Done {
					t.Fatalf("first run: pages %d, done %v (%v); want 30, ended", st.Counters["pages"], st.Done, err)
				}
				first := len(site.Stats().Fetched)

				rep, err := admin.SetSettings(ctx, s.Client, "more", map[string]string{"max-pages": "75"}, "carol")
				if err != nil || !rep.Reopened || !strings.Contains(rep.Sentence(), "--max-pages 30 → 75") {
					t.Fatalf("SetSettings = %+v (%s), %v; want the crawl reopened", rep, rep.Sentence(), err)
				}
				if st, _ := status.Read(ctx, s.Client, "more"); st.Done {
					t.Fatal("still said done after the budget was raised")
				}
				runWorkers(t, ctx, s, "more", fastOptions("w3"), fastOptions("w4"))
				st, err = status.Read(ctx, s.Client, "more")
				if err != nil || st.Counters["pages"] != 75 || !st.Done {
					t.Fatalf("second run: pages %d, done %v (%v); want 75, ended", st.Counters["pages"], st.Done, err)
				}
				if got := len(site.Stats().Fetched) - first; got < 45 {
					t.Errorf("the second run asked the site for %d new URLs; want the 45 pages more at least", got)
				}
				if over := site.Overfetched(0); len(over) > 0 {
					t.Errorf("fetched again after the reopening: %v", over)
				}

				// Lifted (0: no budget), the crawl goes on to the end of the site.
				if rep, err := admin.SetSettings(ctx, s.Client, "more", map[string]string{"max-pages": "0"}, "carol"); err != nil || !rep.Reopened {
					t.Fatalf("lifting the budget: %+v, %v; want the crawl reopened", rep, err)
				}
				runWorkers(t, ctx, s, "more", fastOptions("w5"), fastOptions("w6"))
				if missing := site.Missing(); len(missing) > 0 {
					t.Errorf("the budget lifted, %d truth URLs never fetched: %v", len(missing), missing)
				}
				if over := site.Overfetched(0); len(over) > 0 {
					t.Errorf("fetched again after the budget was lifted: %v", over)
				}
			})
		})
	}
}

// URLs seeded at a high priority are all fetched before their host's URLs
// of a lower one, though seeded after them, with two workers at the
// host's rate: the order is the site's own, by arrival. At 20 requests a
// second a token's window is 25 ms of every 50, so requests keep their
// tokens' order, save one whose window closed before its request could go
// (a loaded machine): handed back late, it asks its host again and waits
// behind the tokens granted meanwhile, lower URLs' among them. The workers'
// logs say which; every high URL that kept its token comes before every
// low one. (Across hosts the order stays the tokens': frontier
// TestAHostsURLsArePoppedHighestPriorityFirst checks the pops at every
// priority.)
func TestHighPrioritySeedsAreFetchedFirst(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		srv, hits := recordingSite(t, func(w io.Writer, _ string) { io.WriteString(w, "<html><body>a page</body></html>") })
		s.FollowWallClock(t)
		set := settings.Default()
		set.Rate, set.Burst, set.AllowPrivate, set.MaxDepth = 20, 1, true, 0
		seed := func(prefix string, n, priority int) {
			var urls []*url.URL
			for i := range n {
				u, _ := url.Parse(fmt.Sprintf("%s/%s/%d", srv.URL, prefix, i))
				urls = append(urls, u)
			}
			sd, err := admin.NewSeeder(context.Background(), s.Client, "prio", set, admin.SeedOptions{Priority: priority})
			if err != nil {
				t.Fatal(err)
			}
			if err := sd.Add(context.Background(), urls); err != nil {
				t.Fatal(err)
			}
		}
		seed("low", 20, -2)
		seed("high", 10, 5)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		late := &lateURLs{}
		w1, w2 := fastOptions("w1"), fastOptions("w2")
		w1.Log, w2.Log = slog.New(late), slog.New(late)
		runWorkers(t, ctx, s, "prio", w1, w2)
		var order []string
		for _, h := range hits() {
			order = append(order, h.path)
		}
		if len(order) != 30 {
			t.Fatalf("%d requests; want the 30 seeds: %v", len(order), order)
		}
		missed := late.paths()
		kept, lastHigh, firstLow := 0, -1, len(order)
		for i, p := range order {
			switch {
			case strings.HasPrefix(p, "/low/"):
				firstLow = min(firstLow, i)
			case !missed[p]:
				kept++
				lastHigh = i
			}
		}
		if kept < 5 {
			t.Fatalf("%d of the 10 high URLs kept their tokens (late: %v): too few to tell the order", kept, missed)
		}
		if lastHigh > firstLow {
			t.Fatalf("request %d was %s, before %s, a high URL that kept its token (late: %v): %v", firstLow, order[firstLow], order[lastHigh], missed, order)
		}
	})
}

// lateURLs is a log handler that keeps the paths of the URLs whose
// token's window closed before their request could go (fetchLoops.late).
type lateURLs struct {
	mu   sync.Mutex
	late map[string]bool
}

func (h *lateURLs) Enabled(context.Context, slog.Level) bool { return true }
func (h *lateURLs) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lateURLs) WithGroup(string) slog.Handler            { return h }

func (h *lateURLs) Handle(_ context.Context, r slog.Record) error {
	if !strings.HasPrefix(r.Message, "token's window closed") {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "url" {
			if u, err := url.Parse(a.Value.String()); err == nil {
				h.mu.Lock()
				if h.late == nil {
					h.late = map[string]bool{}
				}
				h.late[u.Path] = true
				h.mu.Unlock()
			}
		}
		return true
	})
	return nil
}

func (h *lateURLs) paths() map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]bool{}
	for p := range h.late {
		out[p] = true
	}
	return out
}

// A sitemap's priorities map onto a host's levels: 0.5, the default, is
// 0; each tenth above or below is a level, up to 5 and down to -5.
func TestSitemapPriorityLevels(t *testing.T) {
	for p, want := range map[float64]int{0: -5, 0.1: -4, 0.44: -1, 0.5: 0, 0.55: 1, 0.8: 3, 1: 5} {
		if got := crawl.SitemapPriority(p); got != want {
			t.Errorf("SitemapPriority(%v) = %d; want %d", p, got, want)
		}
	}
}

// What a worker does itself follows a change too: from a second after
// 'crawler set' returned, every request carries the new user agent and
// header, and a link found since that a new --deny matches is not
// followed (links queued before it still are: a filter judges a link when
// it is found). Two workers, both Redis kinds.
func TestAWorkersOwnSettingsFollowAChange(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		srv, hits := recordingSite(t, func(w io.Writer, path string) {
			switch {
			case path == "/":
				for i := range 40 {
					fmt.Fprintf(w, `<a href="/a/%d">a</a>`, i)
				}
			case strings.HasPrefix(path, "/a/"):
				fmt.Fprintf(w, `<a href="/skip%s">skip</a>`, strings.TrimPrefix(path, "/a"))
			}
		})
		s.FollowWallClock(t)
		set := settings.Default()
		set.Rate, set.Burst, set.AllowPrivate, set.Headers = 20, 1, true, []string{"X-Run: 1"}
		root, _ := url.Parse(srv.URL + "/")
		if _, err := admin.Seed(context.Background(), s.Client, "own", set, []*url.URL{root}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var changed time.Time
		done := make(chan struct{})
		go func() {
			defer close(done)
			awaitTrue(t, "10 requests", func() bool { return len(hits()) >= 10 })
			if _, err := admin.SetSettings(ctx, s.Client, "own", map[string]string{"header": "X-Run: 2",
				"user-agent": "RedCrawl/9.9 (+mailto:test@example.org)", "deny": "/skip/"}, "dave"); err != nil {
				t.Error(err)
			}
			changed = time.Now() // read after done is closed
		}()
		runWorkers(t, ctx, s, "own", fastOptions("w1"), fastOptions("w2"))
		<-done
		seen := hits()
		after, fetchedAfter := 0, map[string]bool{}
		for _, h := range seen {
			if h.at.Before(changed.Add(time.Second)) {
				continue
			}
			after++
			if h.run != "2" || !strings.HasPrefix(h.agent, "RedCrawl/9.9") {
				t.Errorf("%s, a second after the change: X-Run %q, User-Agent %q", h.path, h.run, h.agent)
			}
			if strings.HasPrefix(h.path, "/a/") {
				fetchedAfter[strings.TrimPrefix(h.path, "/a/")] = true
			}
		}
		for _, h := range seen {
			if n, ok := strings.CutPrefix(h.path, "/skip/"); ok && fetchedAfter[n] {
				t.Errorf("%s was followed though found after --deny /skip/", h.path)
			}
		}
		if after < 5 || len(fetchedAfter) < 5 {
			t.Fatalf("%d requests (%d pages of /a/) a second after the change; want enough to judge", after, len(fetchedAfter))
		}
		// Each record names the settings its response was read under.
		recs := exportedByURL(t, context.Background(), s.Client, "own")
		for _, h := range seen {
			rec, ok := recs[srv.URL+h.path]
			switch {
			case !ok:
				t.Errorf("%s has no record", h.path)
			case h.at.Before(changed.Add(-time.Second)) && rec.SettingsVersion != 0,
				h.at.After(changed.Add(time.Second)) && rec.SettingsVersion != 1:
				t.Errorf("%s, requested %v from the change, says settings version %d", h.path, h.at.Sub(changed), rec.SettingsVersion)
			}
		}
	})
}

// hit is one request a recording site saw: its path, User-Agent, X-Run
// header, and when.
type hit struct {
	path, agent, run string
	at               time.Time
}

// recordingSite serves HTML pages written by page (no robots.txt) and
// records every request, in the order they came; hits reads them.
func recordingSite(t *testing.T, page func(w io.Writer, path string)) (srv *httptest.Server, hits func() []hit) {
	var mu sync.Mutex
	var seen []hit
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		seen = append(seen, hit{r.URL.Path, r.UserAgent(), r.Header.Get("X-Run"), time.Now()})
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		page(w, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []hit {
		mu.Lock()
		defer mu.Unlock()
		return append([]hit(nil), seen...)
	}
}
