package crawl_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier/keyspace"
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
	wholeCrawl(t)
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 12, ListenBase: "127.0.0.20"})
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		set := settings.Default()
		set.Rate, set.Burst, set.AllowPrivate = 50, 5, true
		seedSite(t, s, site, "own", set)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		slow, fast := site.Hosts()[0], site.Hosts()[1]
		did, err := admin.ChangeHost(ctx, s.Client, "own", slow, admin.HostChange{Rate: 2, Burst: 1, By: "alice"})
		if err != nil || len(did) != 1 {
			t.Fatalf("ChangeHost = %v, %v", did, err)
		}
		st, err := status.Read(ctx, s.Client, "own")
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
		st, err = status.Read(ctx, s.Client, "own")
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

// A host blocked mid-crawl (crawler host HOST --block) gets no request
// once the command returns, though workers held its URLs with tokens
// reserved ahead; each of its URLs has a record, fetched before the block
// or ended by it ("skipped", saying so); the other host is crawled whole;
// and status lists the block.
func TestAHostBlockedMidCrawlGetsNoRequestAfterAndEveryURLARecord(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		started := make(chan struct{}, 1)
		blocked := newPageSite(t, 0, func(n int64) {
			if n == 5 {
				started <- struct{}{}
			}
		})
		other := newPageSite(t, 0, nil)
		set := settings.Default()
		set.Rate, set.Burst, set.AllowPrivate = 20, 2, true
		seeds := append(blocked.seeds(40), other.seeds(40)...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s.FollowWallClock(t)
		if _, err := admin.Seed(ctx, s.Client, "block", set, seeds); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			runWorkers(t, ctx, s, "block", fastOptions("w1"), fastOptions("w2"))
		}()
		select {
		case <-started:
		case <-done:
			t.Fatal("the crawl ended before the host's fifth request")
		}
		host := strings.TrimPrefix(blocked.URL, "http://")
		did, err := admin.ChangeHost(ctx, s.Client, "block", host, admin.HostChange{Block: true, By: "alice"})
		returned := time.Now()
		if err != nil || len(did) != 1 || !strings.Contains(did[0], "blocked") {
			t.Fatalf("ChangeHost = %v, %v", did, err)
		}
		st, err := status.Read(ctx, s.Client, "block")
		if err != nil || len(st.HostRules) != 1 || !st.HostRules[0].Blocked || !strings.Contains(st.String(), host+" blocked") {
			t.Errorf("status lists %+v (%v):\n%s", st.HostRules, err, st)
		}
		<-done
		blocked.mu.Lock()
		var after int
		for _, at := range blocked.arrivals {
			if at.After(returned) {
				after++
			}
		}
		fetched := len(blocked.fetched)
		blocked.mu.Unlock()
		if after > 0 {
			t.Errorf("%d requests reached the blocked host after the command returned", after)
		}
		other.onceEach(t, exportedByURL(t, ctx, s.Client, "block"), seeds[40:])
		fetchedRecs, skipped := 0, 0
		for _, m := range s.Client.XRange(ctx, keyspace.KeysFor("block").Results, "-", "+").Val() {
			raw, _ := m.Values["rec"].(string)
			var rec crawl.Record
			if err := json.Unmarshal([]byte(raw), &rec); err != nil || !strings.HasPrefix(rec.URL, blocked.URL) {
				continue
			}
			switch {
			case rec.Outcome == crawl.OutcomeSkipped && strings.Contains(rec.Error, "--block"):
				skipped++
			case rec.Outcome == crawl.OutcomeOK:
				fetchedRecs++
			default:
				t.Errorf("a record of the blocked host: %s", raw)
			}
		}
		if fetchedRecs != fetched || fetchedRecs+skipped != 40 || skipped == 0 {
			t.Errorf("the blocked host's 40 URLs: %d fetched (%d records), %d ended by the block; want every one a record", fetched, fetchedRecs, skipped)
		}
	})
}
