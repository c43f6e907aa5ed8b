package frontier

import (
	"context"
	"fmt"
	"testing"

	"github.com/redcrawl/crawler/internal/redistest"
)

// The queue's element encoding has a Go half (element.go: backEntry, the
// compact form "s"/"h" depth ' ' rest under a parent marker, or the item's
// JSON) and a Lua half (push.lua: fr_push_back stores it, pop.lua's fr_pop and
// queue.lua's fr_json give it back as item JSON). Whatever item Go accepts to queue
// comes back from a pop as it went in, on miniredis and on redis-server.
// The committed corpus (testdata/fuzz/FuzzQueueElement) runs with go test;
// go test -fuzz FuzzQueueElement ./frontier looks for more.
func FuzzQueueElement(f *testing.F) {
	f.Add("/a/b.html", int16(0), "", true, uint8(0))
	f.Add("/p?q=1&r=%20x", int16(3), "https://h.example/", false, uint8(0))
	f.Add("", int16(1), "http://h.example/x", true, uint8(0))
	f.Add("?only=query", int16(2), "", false, uint8(0))
	f.Add("/retry", int16(1), "https://h.example/", true, uint8(2))
	f.Add("/é/ü?ß=ç", int16(7), "https://h.example/ü", true, uint8(0))
	f.Add("/a b\"c\\d", int16(0), "p\"a\\r", false, uint8(0))
	f.Add("/deep", int16(-1), "", true, uint8(0))
	f.Add("/x", int16(32000), "{\"json\":1}", false, uint8(0))
	servers := []*redistest.Server{redistest.Mini(f), redistest.Real(f)}
	f.Fuzz(func(t *testing.T, rest string, depth int16, parent string, https bool, attempts uint8) {
		scheme := "http"
		if https {
			scheme = "https"
		}
		in := Item{URL: scheme + "://h.example" + rest, Depth: int(depth), Parent: parent, Attempts: int(attempts)}
		if _, err := backEntry(in); err != nil {
			return // not an absolute URL: Go refuses it before Redis sees it
		}
		for _, s := range servers {
			ctx := context.Background()
			s.Client.FlushAll(ctx)
			fr := openShards(t, s.Client, "fz", 1, 0)
			if _, err := fr.EnqueueAll(ctx, []Item{in}); err != nil {
				t.Fatalf("%s: enqueue %+v: %v", s.Kind, in, err)
			}
			x, err := fr.Exchange(ctx, nil, nil, 1)
			if err != nil || len(x.Popped) != 1 {
				t.Fatalf("%s: pop after queueing %+v: %d URLs, %v", s.Kind, in, len(x.Popped), err)
			}
			got := x.Popped[0].Item
			if fmt.Sprint(got.URL, got.Depth, got.Parent, got.Attempts) != fmt.Sprint(in.URL, in.Depth, in.Parent, in.Attempts) {
				t.Fatalf("%s: queued %+v, popped %+v", s.Kind, in, got)
			}
		}
	})
}
