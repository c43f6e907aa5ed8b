package crawl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redcrawl/crawler/leader"
)

func seedSite(t *testing.T, s *redistest.Server, site *testsite.Site, name string, set crawl.Settings) {
	t.Helper()
	var seeds []*url.URL
	for _, r := range site.Roots() {
		u, _ := url.Parse(r)
		seeds = append(seeds, u)
	}
	rep, err := crawl.Seed(context.Background(), s.Client, crawl.KeysFor(name), set, seeds)
	if err != nil || rep.Queued != len(seeds) {
		t.Fatalf("Seed = %+v, %v", rep, err)
	}
}

func fastOptions(id string) crawl.Options {
	return crawl.Options{ID: id, Concurrency: 4, ExitWhenDone: true, Leader: leader.ConfigForTTL(time.Second),
		SweepInterval: 50 * time.Millisecond, Lease: 2 * time.Second}
}

// Two workers crawl the whole test site: every URL of /_truth is fetched,
// nothing disallowed is, no URL more than twice, and both exit when done.
func TestTwoWorkersCrawlTheSite(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 60, Port: 0, ListenBase: "127.0.0.10"})
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		set := crawl.DefaultSettings()
		set.Rate, set.AllowPrivate, set.ExpectedURLs = math.Inf(1), true, 10000
		seedSite(t, s, site, "site", set)

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var out bytes.Buffer
		var wg sync.WaitGroup
		for _, id := range []string{"w1", "w2"} {
			o := fastOptions(id)
			if id == "w1" {
				o.Out = &out
			}
			w, err := crawl.NewWorker(ctx, s.Client, "site", o)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() { defer wg.Done(); w.Run(ctx) }()
		}
		wg.Wait()
		if ctx.Err() != nil {
			t.Fatal("workers did not finish in time")
		}
		st := site.Stats()
		fetched := map[string]bool{}
		for _, u := range st.Fetched {
			fetched[u] = true
		}
		missing := 0
		for _, u := range site.Truth() {
			if !fetched[u] {
				t.Errorf("not fetched: %s", u)
				missing++
			}
		}
		if len(st.Disallowed) > 0 || st.MaxFetchesPerURL > 2 {
			t.Errorf("disallowed fetched %v; most fetches of one URL %d", st.Disallowed, st.MaxFetchesPerURL)
		}
		status, err := crawl.ReadStatus(ctx, s.Client, "site")
		if err != nil || !status.Done || !status.Frontier.Empty() {
			t.Fatalf("status %+v, %v", status, err)
		}
		var exported bytes.Buffer
		n, err := crawl.Export(ctx, s.Client, "site", &exported)
		if err != nil || int64(n) != status.Counters["pages"]+status.Counters["skipped"] {
			t.Fatalf("exported %d records (%v); counters %v", n, err, status.Counters)
		}
		var rec crawl.Record
		line, _ := out.ReadBytes('\n')
		if err := json.Unmarshal(line, &rec); err != nil || rec.Worker != "w1" || rec.URL == "" {
			t.Fatalf("--out record %q: %v", line, err)
		}
		if missing == 0 {
			t.Logf("fetched all %d truth URLs; %d requests in all; counters %v", len(site.Truth()), len(st.Fetched), status.Counters)
		}
		keys := s.Client.Keys(ctx, "*").Val()
		sort.Strings(keys)
		deleted, err := crawl.Reset(ctx, s.Client, "site")
		if err != nil || s.Client.DBSize(ctx).Val() != 0 {
			t.Fatalf("reset deleted %d of %d keys (%v), left %v", deleted, len(keys), err, s.Client.Keys(ctx, "*").Val())
		}
	})
}
