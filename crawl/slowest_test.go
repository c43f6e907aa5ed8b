package crawl_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

// One host at the slowest rate a crawl accepts (one request a day), two at
// 50/s: the two are crawled whole at their rate by two workers, the slow
// one gets its first request and no other, and no exchange fails (a rate
// of 1e-12 once stopped every host of the worker: its bucket's times came
// back from Redis in exponent form).
func TestAHostAtTheSlowestRateHoldsNoOtherBack(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 3, Pages: 20, ListenBase: "127.0.0.70"})
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		set := settings.Default()
		set.Rate, set.Burst, set.AllowPrivate = 50, 5, true
		seedSite(t, s, site, "slowest", set)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		slow := site.Hosts()[2]
		if _, err := admin.ChangeHost(ctx, s.Client, "slowest", slow, admin.HostChange{Rate: settings.MinRate, Burst: 1, By: "test"}); err != nil {
			t.Fatal(err)
		}
		var logs syncBuf
		var wg sync.WaitGroup
		for _, id := range []string{"w1", "w2"} {
			o := fastOptions(id)
			o.Log = slog.New(slog.NewTextHandler(&logs, nil))
			w, err := crawl.NewWorker(ctx, s.Client, "slowest", o)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() { defer wg.Done(); w.Run(ctx) }()
		}
		var want []string
		for _, u := range site.Truth() {
			if !strings.Contains(u, "//"+slow+"/") {
				want = append(want, u)
			}
		}
		for {
			if len(testsite.Missing(want, site.Stats())) == 0 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("the fast hosts' pages not all fetched in a minute: %d missing\n%s", len(testsite.Missing(want, site.Stats())), logs.String())
			}
			time.Sleep(50 * time.Millisecond) // polling the site's own count: no event to await
		}
		cancel()
		wg.Wait()
		hs := site.Stats().Hosts
		if n := len(site.Times(slow)); n > 1 {
			t.Errorf("the host at one request a day got %d page requests", n)
		}
		for _, h := range site.Hosts()[:2] {
			if n := hs[h].MaxPerSecond; n > 55 {
				t.Errorf("%s at 50/s burst 5 got %d requests in one second", h, n)
			}
		}
		if strings.Contains(logs.String(), "exchange failed") || strings.Contains(logs.String(), "malformed reply") {
			t.Errorf("an exchange failed:\n%s", logs.String())
		}
	})
}
