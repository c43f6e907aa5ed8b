package frontier_test

import (
	"context"
	"testing"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
)

// Requeue moves a queued URL to its item's priority and leaves the counts
// as one URL's: a URL of another host's compact list, a JSON element (a
// retry's), one at its priority already, one leased, one never queued;
// the moved one is popped first, and every URL once.
func TestRequeueMovesAQueuedURLAndKeepsTheCounts(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		ctx := context.Background()
		e.enqueue(t, []frontier.Item{{URL: "http://a/1"}, {URL: "http://a/2"}, {URL: "http://a/3"}, {URL: "http://a/4", Priority: 5},
			{URL: "http://a/5", Attempts: 1, Errors: []string{"x"}}, {URL: "http://a/6"}})
		// http://a/4, of the highest priority, leased: popped, not finished.
		x := e.exchange(t, nil, nil, 1)
		if len(x.Popped) != 1 || x.Popped[0].Item.URL != "http://a/4" {
			t.Fatalf("popped %+v; want http://a/4", x.Popped)
		}
		before := e.sizes(t)
		got, err := e.f.Requeue(ctx, []frontier.Item{{URL: "http://a/3", Priority: 9}, {URL: "http://a/6"},
			{URL: "http://a/5", Priority: 7}, {URL: "http://a/4", Priority: 9}, {URL: "http://a/never", Priority: 9}})
		if err != nil {
			t.Fatal(err)
		}
		if want := []bool{true, true, true, true, false}; len(got) != 5 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] || got[4] != want[4] {
			t.Fatalf("Requeue = %v; want %v (moved, in place, moved, leased, never queued)", got, want)
		}
		if after := e.sizes(t); after != before {
			t.Fatalf("sizes %+v after the moves; want %+v", after, before)
		}
		var order []string
		finish(t, e.f, x.Popped[0], frontier.Outcome{Stat: "done"})
		for l := pop(t, e.f); l != nil; l = pop(t, e.f) {
			order = append(order, l.Item.URL)
			finish(t, e.f, l, frontier.Outcome{Stat: "done"})
		}
		want := []string{"http://a/3", "http://a/5", "http://a/1", "http://a/2", "http://a/6"}
		if len(order) != len(want) {
			t.Fatalf("popped %v; want %v", order, want)
		}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("popped %v; want %v (by priority: 9, 7, then 0 in order)", order, want)
			}
		}
		if sz := e.sizes(t); sz.Queued != 0 {
			t.Errorf("%d counted queued after every URL was popped", sz.Queued)
		}
	})
}
