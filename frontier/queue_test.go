package frontier_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
)

// Every item comes back off the compact queue as it went in, in order,
// whatever its form: compact elements under shared parent markers, items
// stored whole (retries, sitemaps, other schemes, user info), pops of any
// size that split a page's links, and URLs put back at the front between
// them. The hosts' lengths and the total stay exact throughout.
func TestQueueGivesBackEveryItemWholeAndInOrder(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		const h = "h.example:8080"
		var want []frontier.Item
		for p := 0; p < 3; p++ { // three pages' links, each page its own parent
			parent := fmt.Sprintf("https://%s/page/%d", h, p)
			for i := 0; i < 4; i++ {
				want = append(want, frontier.Item{URL: fmt.Sprintf("https://%s/p%d/%d?q=a b", h, p, i), Depth: p + 1, Parent: parent})
			}
			want = append(want, frontier.Item{URL: fmt.Sprintf("http://%s/plain/%d", h, p), Depth: 2, Parent: parent})
		}
		want = append(want,
			frontier.Item{URL: "http://" + h, Depth: 0},                                                          // no path, no parent
			frontier.Item{URL: "http://" + h + "/sitemap.xml", Kind: frontier.KindSitemap},                       // whole
			frontier.Item{URL: "http://" + h + "/retry", Attempts: 2, Errors: []string{"e1", "e2"}, Parent: "x"}, // whole
			frontier.Item{URL: "http://user@" + h + "/secret", Depth: 1, Parent: "https://" + h + "/page/2"},
			frontier.Item{URL: "http://" + h + "/after", Depth: 7, Parent: "https://" + h + "/page/0"}, // a parent again
			// Characters JSON escapes, in a URL and in its parent (queue.lua's
			// fr_json writes such an item through cjson), and some that it does not.
			frontier.Item{URL: "https://" + h + `/odd?a=b\c"d`, Depth: 3, Parent: "https://" + h + `/p\"q`},
			frontier.Item{URL: "https://" + h + "/tab", Depth: 3, Parent: "https://" + h + "/page\t1"},
			frontier.Item{URL: "https://" + h + "/ünï/€", Depth: 2, Parent: "https://" + h + "/a/b/c"},
		)
		e.enqueue(t, want)
		model := append([]frontier.Item(nil), want...) // the queue as it should be
		for n := 1; len(model) > 0; n = n%4 + 1 {      // pops of 1, 2, 3, 4 URLs
			x := e.exchange(t, nil, nil, n)
			if len(x.Popped) != min(n, len(model)) {
				t.Fatalf("popped %d with %d queued; want %d", len(x.Popped), len(model), min(n, len(model)))
			}
			for i, l := range x.Popped {
				if !reflect.DeepEqual(l.Item, model[i]) {
					t.Fatalf("popped %+v; want %+v", l.Item, model[i])
				}
			}
			model = model[len(x.Popped):]
			for i, l := range x.Popped {
				if i == 0 && n == 3 { // put back: it must come first next time, whole
					putBack(t, e.f, l, frontier.Requeue(time.Millisecond))
					model = append([]frontier.Item{l.Item}, model...)
					continue
				}
				finish(t, e.f, l, frontier.Outcome{Stat: "done"})
			}
			left := int64(len(model))
			hosts, n, err := e.f.Hosts.Queues(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			if sz := e.sizes(t); sz.Queued != left || left > 0 && (n != 1 || hosts[0].Queued != left) || left == 0 && n != 0 {
				t.Fatalf("%d queued, hosts %+v of %d; want %d", sz.Queued, hosts, n, left)
			}
			e.advance(2 * time.Millisecond) // the requeued host is due again
		}
		if keys := s.Client.Keys(ctx, keyspace.KeysFor("t").Queues+"*").Val(); len(keys) != 0 {
			t.Fatalf("queues left after all was popped: %v", keys)
		}
	})
}
