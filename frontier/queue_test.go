package frontier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
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
		e.f.HostSpacing = 0
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
					if err := e.f.Requeue(ctx, l, 1); err != nil {
						t.Fatal(err)
					}
					model = append([]frontier.Item{l.Item}, model...)
					continue
				}
				finish(t, e.f, l, frontier.Outcome{Stat: "done"})
			}
			left := int64(len(model))
			hosts, n, err := e.f.HostQueues(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			if sz := e.sizes(t); sz.Queued != left || left > 0 && (n != 1 || hosts[0].Queued != left) || left == 0 && n != 0 {
				t.Fatalf("%d queued, hosts %+v of %d; want %d", sz.Queued, hosts, n, left)
			}
			e.advance(2 * time.Millisecond) // the requeued host is due again
		}
		if keys := s.Client.Keys(ctx, frontier.KeysFor("t").Queues+"*").Val(); len(keys) != 0 {
			t.Fatalf("queues left after all was popped: %v", keys)
		}
	})
}

// A crawl seeded by a version before the compact queues keeps its URLs:
// MigrateOldQueue moves them, each host's in order, put-back URLs first.
func TestMigrateOldQueueMovesEveryURL(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.HostSpacing, e.f.PageBudget = 0, 0
		k := frontier.KeysFor("t")
		var want []string
		for i := 0; i < 2500; i++ { // more than one script call moves
			class := "1"
			if i%1000 == 999 {
				class = "0" // put back: first of its host
			}
			u := fmt.Sprintf("http://h%d/%04d", i%2, i)
			member := fmt.Sprintf("h%d\x00%s%016d\x00{\"u\":%q,\"d\":2,\"p\":\"http://h%d/\"}", i%2, class, i, u, i%2)
			s.Client.ZAdd(ctx, k.OldQueue(), redis.Z{Member: member})
		}
		old := s.Client.ZRange(ctx, k.OldQueue(), 0, -1).Val()
		for _, m := range old {
			want = append(want, m[strings.LastIndex(m, "\x00")+1:])
		}
		n, err := e.f.MigrateOldQueue(ctx)
		if err != nil || n != 2500 {
			t.Fatalf("moved %d, %v; want 2500", n, err)
		}
		if s.Client.Exists(ctx, k.OldQueue()).Val() != 0 || e.sizes(t).Queued != 2500 {
			t.Fatalf("after the move: old queue exists %d, %d queued", s.Client.Exists(ctx, k.OldQueue()).Val(), e.sizes(t).Queued)
		}
		got := map[string][]string{}
		for i := 0; i < 30 && e.sizes(t).Queued > 0; i++ {
			for _, l := range e.exchange(t, nil, nil, 100).Popped {
				if l.Item.Depth != 2 || l.Item.Parent != "http://"+l.Host+"/" {
					t.Fatalf("moved item %+v lost its depth or parent", l.Item)
				}
				got[l.Host] = append(got[l.Host], l.Item.URL)
			}
		}
		for _, host := range []string{"h0", "h1"} {
			var w []string
			for _, j := range want {
				var it frontier.Item
				json.Unmarshal([]byte(j), &it)
				if strings.HasPrefix(it.URL, "http://"+host+"/") {
					w = append(w, it.URL)
				}
			}
			if !reflect.DeepEqual(got[host], w) {
				t.Fatalf("host %s: %d URLs in another order than the old queue's %d", host, len(got[host]), len(w))
			}
		}
	})
}
