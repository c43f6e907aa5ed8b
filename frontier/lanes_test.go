package frontier_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"pgregory.net/rapid"
)

// openLanes makes crawl "ln" and opens it twice: a plain worker's
// frontier and a render worker's.
func openLanes(t interface {
	Fatal(...any)
}, s *redistest.Server, p frontier.Policy) (plain, render *frontier.Frontier) {
	ctx := context.Background()
	s.Client.FlushDB(ctx)
	s.Client.HSet(ctx, keyspace.KeysFor("ln").Config, "scope", "host")
	plain, err := frontier.Create(ctx, s.Client, "ln", frontier.Options{Shards: 1, Policy: p}, dedup.Params{Capacity: 10000, FPRate: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	render, err = frontier.Open(ctx, s.Client, "ln", frontier.Options{Shards: 1, Instance: plain.Instance, Lane: frontier.LaneRender, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return plain, render
}

// A host is in one lane at a time, and only the pops of its lane hand out
// its URLs. Over random runs of queueing, lane changes (one host's, and
// the default's), pops by a plain and a render worker, give-backs and
// finished pages with links, no pop hands out a URL of a host in the
// other lane, every host with URLs queued waits in exactly its lane's
// ready set, and at the end both lanes drained give every URL queued
// exactly once.
func TestAPopTakesOnlyItsLanesHosts(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		rapid.Check(t, func(rt *rapid.T) {
			ctx := context.Background()
			plain, render := openLanes(rt, s, frontier.Policy{})
			k := keyspace.KeysFor("ln")
			hosts := []string{"a", "b", "c", "d"}
			own := map[string]string{}
			def := frontier.LanePlain
			lane := func(h string) string {
				if l, ok := own[h]; ok {
					return l
				}
				return def
			}
			queued, popped := map[string]bool{}, map[string]int{}
			var held []*frontier.Lease
			heldBy := map[*frontier.Lease]*frontier.Frontier{}
			seq := 0
			queue := func(h string, n int) []frontier.Item {
				var items []frontier.Item
				for range n {
					seq++
					u := fmt.Sprintf("http://%s/%d", h, seq)
					items = append(items, frontier.Item{URL: u, Depth: 1, Parent: "http://" + h + "/"})
					queued[u] = true
				}
				return items
			}
			pop := func(f *frontier.Frontier, want int, name string) {
				x, err := f.Exchange(ctx, nil, nil, want)
				if err != nil {
					rt.Fatal(err)
				}
				for _, l := range x.Popped {
					if got := f.Lane; lane(l.Host) != got && !(got == "" && lane(l.Host) == frontier.LanePlain) {
						rt.Fatalf("the %s worker popped %s, whose host is in the %s lane", name, l.Item.URL, lane(l.Host))
					}
					popped[l.Item.URL]++
					held = append(held, l)
					heldBy[l] = f
				}
			}
			for range rapid.IntRange(1, 40).Draw(rt, "steps") {
				switch rapid.IntRange(0, 6).Draw(rt, "op") {
				case 0:
					h := rapid.SampledFrom(hosts).Draw(rt, "host")
					if _, err := plain.Enqueue(ctx, queue(h, rapid.IntRange(1, 3).Draw(rt, "n"))); err != nil {
						rt.Fatal(err)
					}
				case 1:
					h := rapid.SampledFrom(hosts).Draw(rt, "laneHost")
					l := rapid.SampledFrom([]string{frontier.LanePlain, frontier.LaneRender}).Draw(rt, "lane")
					if _, err := plain.Render.SetLane(ctx, h, l); err != nil {
						rt.Fatal(err)
					}
					own[h] = l
				case 2:
					def = rapid.SampledFrom([]string{frontier.LanePlain, frontier.LaneRender}).Draw(rt, "default")
					if err := plain.Render.SetDefaultLane(ctx, def); err != nil {
						rt.Fatal(err)
					}
				case 3:
					pop(plain, rapid.IntRange(1, 4).Draw(rt, "want"), "plain")
				case 4:
					pop(render, rapid.IntRange(1, 4).Draw(rt, "want"), "render")
				case 5:
					if len(held) > 0 {
						i := rapid.IntRange(0, len(held)-1).Draw(rt, "back")
						l := held[i]
						held = append(held[:i], held[i+1:]...)
						if _, err := heldBy[l].Exchange(ctx, nil, []*frontier.Lease{l}, 0); err != nil {
							rt.Fatal(err)
						}
						popped[l.Item.URL]--
					}
				case 6:
					if len(held) > 0 {
						i := rapid.IntRange(0, len(held)-1).Draw(rt, "done")
						l := held[i]
						held = append(held[:i], held[i+1:]...)
						links := queue(rapid.SampledFrom(hosts).Draw(rt, "linkHost"), rapid.IntRange(0, 2).Draw(rt, "links"))
						if _, err := heldBy[l].Exchange(ctx, []frontier.Finished{{Lease: l, Outcome: frontier.Outcome{Stat: "ok", Fetched: true, Children: links}}}, nil, 0); err != nil {
							rt.Fatal(err)
						}
					}
				}
				for _, h := range hosts {
					n, _ := s.Client.HGet(ctx, k.Lengths, h).Int64()
					_, errP := s.Client.ZScore(ctx, k.ReadyIn(frontier.LanePlain), h).Result()
					_, errR := s.Client.ZScore(ctx, k.ReadyIn(frontier.LaneRender), h).Result()
					inPlain, inRender := errP == nil, errR == nil
					if n > 0 && inPlain == inRender {
						rt.Fatalf("host %s (%d queued, lane %s): in the plain ready set %v, in the render one %v", h, n, lane(h), inPlain, inRender)
					}
					if n > 0 && inRender != (lane(h) == frontier.LaneRender) {
						rt.Fatalf("host %s of the %s lane waits in the other's ready set", h, lane(h))
					}
				}
			}
			for i := 0; i < 100; i++ {
				before := len(held)
				pop(plain, 10, "plain")
				pop(render, 10, "render")
				if len(held) == before {
					break
				}
			}
			for u := range queued {
				if popped[u] != 1 {
					rt.Fatalf("%s popped %d times, drained", u, popped[u])
				}
			}
		})
	})
}

// A host's tokens are one bucket whichever lane takes them: a host popped
// by a plain worker at one request a second and then put in the render
// lane is not popped by a render worker before its next token is due.
func TestAHostMovedToTheRenderLaneKeepsItsTokens(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		plain, render := openLanes(t, s, frontier.Policy{HostRate: 1, HostBurst: 1})
		var items []frontier.Item
		for i := range 3 {
			items = append(items, frontier.Item{URL: fmt.Sprintf("http://a/%d", i), Depth: 1})
		}
		if _, err := plain.Enqueue(ctx, items); err != nil {
			t.Fatal(err)
		}
		x, err := plain.Exchange(ctx, nil, nil, 3)
		if err != nil || len(x.Popped) != 1 {
			t.Fatalf("plain pop: %d URLs, %v; want 1 (burst 1)", len(x.Popped), err)
		}
		k := keyspace.KeysFor("ln")
		tat := s.Client.ZScore(ctx, k.Ready, "a").Val()
		if moved, err := plain.Render.SetLane(ctx, "a", frontier.LaneRender); err != nil || !moved {
			t.Fatalf("SetLane: moved %v, %v", moved, err)
		}
		if got := s.Client.ZScore(ctx, k.ReadyIn(frontier.LaneRender), "a").Val(); got != tat {
			t.Fatalf("the host's tat in the render lane %v; it was %v", got, tat)
		}
		if x, err = plain.Exchange(ctx, nil, nil, 3); err != nil || len(x.Popped) != 0 || x.Info.NextDue >= 0 {
			t.Fatalf("plain pop after the move: %d URLs, wait %v, %v; want none and nothing of its lane queued", len(x.Popped), x.Info.NextDue, err)
		}
		if x, err = render.Exchange(ctx, nil, nil, 3); err != nil || len(x.Popped) != 0 || x.Info.NextDue <= 0 {
			t.Fatalf("render pop before the next token: %d URLs, wait %v, %v; want none, and a wait", len(x.Popped), x.Info.NextDue, err)
		}
	})
}
