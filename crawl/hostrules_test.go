package crawl_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

// A host given its own rate (crawler host HOST --rate 2) keeps it in
// every worker while the other host keeps the crawl's (50/s): by the
// site's own clock, no second holds more of the first's requests than its
// rate and burst allow, while the other's go faster than that; status
// lists the rule, the event log says who set it, and every page is
// fetched.
func TestAHostKeepsItsOwnRateWhileOthersKeepTheCrawls(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 12, ListenBase: "127.0.0.20"})
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		set := crawl.DefaultSettings()
		set.Rate, set.Burst, set.AllowPrivate = 50, 5, true
		seedSite(t, s, site, "own", set)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		slow, fast := site.Hosts()[0], site.Hosts()[1]
		did, err := crawl.ChangeHost(ctx, s.Client, "own", slow, crawl.HostChange{Rate: 2, Burst: 1, By: "alice"})
		if err != nil || len(did) != 1 {
			t.Fatalf("ChangeHost = %v, %v", did, err)
		}
		st, err := crawl.ReadStatus(ctx, s.Client, "own")
		if err != nil || len(st.HostRules) != 1 || st.HostRules[0].Host != slow || !strings.Contains(st.String(), slow+" 2 req/s (burst 1)") {
			t.Fatalf("status lists %+v (%v):\n%s", st.HostRules, err, st)
		}
		runWorkers(t, ctx, s, "own", fastOptions("w1"), fastOptions("w2"))
		for _, u := range site.Missing() {
			t.Errorf("not fetched: %s", u)
		}
		hs := site.Stats().Hosts
		if n := hs[slow].MaxPerSecond; n > 3 {
			t.Errorf("%s, at its own 2/s burst 1, got %d requests in one second", slow, n)
		}
		if n := hs[fast].MaxPerSecond; n <= 3 || n > 55 {
			t.Errorf("%s, at the crawl's 50/s burst 5, got at most %d requests in a second; want more than the other's 3, at most 55", fast, n)
		}
		st, err = crawl.ReadStatus(ctx, s.Client, "own")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range st.Events {
			found = found || e.Kind == "host" && strings.Contains(e.Text, "by alice")
		}
		if !found {
			t.Errorf("no event says alice set %s's rate: %+v", slow, st.Events)
		}
	})
}
