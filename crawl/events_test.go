package crawl_test

import (
	"context"
	"math"
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
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/internal/redistest"
)

// The event log tells a learner what the coordination did: the first
// worker takes the lock, a host that answers 429 is paused, the stopping
// scheduler hands the lock over, the next one takes it "after w1 handed it
// over", a recrawl is asked for; status gives them newest first.
func TestTheEventLogTellsTheLockHandoverAndAPause(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		var served atomic.Bool // the first /slow is answered 429, the retry 200
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/robots.txt":
				http.NotFound(w, r)
			case r.URL.Path == "/slow" && !served.Swap(true):
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
			default:
				w.Header().Set("Content-Type", "text/html")
				w.Write([]byte(`<html><body><a href="/slow">slow</a></body></html>`))
			}
		}))
		defer srv.Close()
		s.FollowWallClock(t)
		set := settings.Default()
		set.Rate, set.AllowPrivate = math.Inf(1), true
		root, _ := url.Parse(srv.URL + "/")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.Seed(ctx, s.Client, "ev", set, []*url.URL{root}); err != nil {
			t.Fatal(err)
		}
		o := fastOptions("w1")
		o.Concurrency = 1
		runWorkers(t, ctx, s, "ev", o)
		if _, err := admin.Recrawl(ctx, s.Client, "ev", true); err != nil {
			t.Fatal(err)
		}
		runWorkers(t, ctx, s, "ev", fastOptions("w2"))
		st, err := status.Read(ctx, s.Client, "ev")
		if err != nil {
			t.Fatal(err)
		}
		var texts []string
		for i := len(st.Events) - 1; i >= 0; i-- { // oldest first
			texts = append(texts, st.Events[i].Kind+": "+st.Events[i].Text)
		}
		want := []string{
			"lead: epoch 1: w1 took the lock",
			"pause: host " + root.Host + " paused",
			"resign: epoch 1: w1 handed the lock over (it is stopping)",
			"recrawl: a recrawl of every page was asked for: 2 of 2 pages due",
			"lead: epoch 2: w2 took the lock after w1 handed it over",
			"resign: epoch 2: w2 handed the lock over",
		}
		got := strings.Join(texts, "\n")
		at := 0
		for _, w := range want {
			i := strings.Index(got[at:], w)
			if i < 0 {
				t.Fatalf("the event log lacks %q after what came before; it holds:\n%s", w, got)
			}
			at += i + len(w)
		}
		if st.Events[0].Kind != events.Resign || st.Events[0].At.IsZero() {
			t.Errorf("newest event %+v; want w2's resignation, with its time", st.Events[0])
		}
	})
}
