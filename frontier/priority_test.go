package frontier_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/recrawl"
	"github.com/redcrawl/crawler/internal/redistest"
	"pgregory.net/rapid"
)

// prioModel is what a host's queue should hold: a list a level.
type prioModel map[string]map[int][]string

func (m prioModel) push(host string, level int, urls []string, front bool) {
	if m[host] == nil {
		m[host] = map[int][]string{}
	}
	if front {
		m[host][level] = append(append([]string{}, urls...), m[host][level]...)
	} else {
		m[host][level] = append(m[host][level], urls...)
	}
}

// next takes the URL a pop of host must give: the first of its highest level.
func (m prioModel) next(host string) (string, bool) {
	best, found := 0, false
	for l, urls := range m[host] {
		if len(urls) > 0 && (!found || l > best) {
			best, found = l, true
		}
	}
	if !found {
		return "", false
	}
	u := m[host][best][0]
	m[host][best] = m[host][best][1:]
	return u, true
}

func (m prioModel) total() int64 {
	n := 0
	for _, ls := range m {
		for _, urls := range ls {
			n += len(urls)
		}
	}
	return int64(n)
}

// levels is what the levels hash should say of each host: its levels
// other than 0 that hold URLs, highest first.
func (m prioModel) levels() map[string]string {
	out := map[string]string{}
	for h, ls := range m {
		var have []int
		for l, urls := range ls {
			if l != 0 && len(urls) > 0 {
				have = append(have, l)
			}
		}
		sort.Sort(sort.Reverse(sort.IntSlice(have)))
		if len(have) > 0 {
			out[h] = strings.Trim(fmt.Sprint(have), "[]")
		}
	}
	return out
}

// Within a host, a URL of a higher priority is popped first; within one
// priority, the crawl's order holds (first in, first out; or, depth-first,
// the last queued first), and a URL given back goes to the front of its
// own priority. Over random runs of queueing (at every priority), pops,
// give-backs and finished pages on three hosts, every URL popped is the
// one the model says, the queue's counts and the hash of levels match it,
// and nothing is lost.
func TestAHostsURLsArePoppedHighestPriorityFirst(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		rapid.Check(t, func(rt *rapid.T) {
			ctx := context.Background()
			s.Client.FlushDB(ctx)
			s.Client.HSet(ctx, keyspace.KeysFor("pr").Config, "scope", "host")
			depth := rapid.Bool().Draw(rt, "depth")
			f, err := frontier.Create(ctx, s.Client, "pr", frontier.Options{Shards: 1, Policy: frontier.Policy{Depth: depth}},
				dedup.Params{Capacity: 10000, FPRate: 0.001})
			if err != nil {
				rt.Fatal(err)
			}
			m := prioModel{}
			var held []*frontier.Lease
			seq := 0
			hosts := []string{"a", "b", "c"}
			for step := range rapid.IntRange(1, 40).Draw(rt, "steps") {
				switch op := rapid.IntRange(0, 3).Draw(rt, "op"); {
				case op == 0 || step == 0: // queue a batch of one host at one priority
					host := rapid.SampledFrom(hosts).Draw(rt, "host")
					level := rapid.SampledFrom([]int{frontier.MinPriority, -3, 0, 0, 2, frontier.MaxPriority}).Draw(rt, "level")
					var items []frontier.Item
					var urls []string
					for range rapid.IntRange(1, 4).Draw(rt, "n") {
						seq++
						u := fmt.Sprintf("http://%s/%d", host, seq)
						items = append(items, frontier.Item{URL: u, Depth: 1, Parent: "http://" + host + "/", Priority: level})
						urls = append(urls, u)
					}
					if _, err := f.Enqueue(ctx, items); err != nil {
						rt.Fatal(err)
					}
					m.push(host, level, urls, depth)
				case op == 1: // pop
					x, err := f.Exchange(ctx, nil, nil, rapid.IntRange(1, 8).Draw(rt, "want"))
					if err != nil {
						rt.Fatal(err)
					}
					for _, l := range x.Popped {
						want, ok := m.next(l.Host)
						if !ok || l.Item.URL != want {
							rt.Fatalf("popped %s (priority %d); the model's next of %s: %q", l.Item.URL, l.Item.Priority, l.Host, want)
						}
						held = append(held, l)
					}
				case op == 2 && len(held) > 0: // give one back
					i := rapid.IntRange(0, len(held)-1).Draw(rt, "back")
					l := held[i]
					held = append(held[:i], held[i+1:]...)
					if _, err := f.Exchange(ctx, nil, []*frontier.Lease{l}, 0); err != nil {
						rt.Fatal(err)
					}
					m.push(l.Host, l.Item.Priority, []string{l.Item.URL}, true)
				case op == 3 && len(held) > 0: // finish one, its links queued at one priority (a sitemap's)
					i := rapid.IntRange(0, len(held)-1).Draw(rt, "done")
					l := held[i]
					held = append(held[:i], held[i+1:]...)
					level := rapid.SampledFrom([]int{-5, 0, 3}).Draw(rt, "linkLevel")
					var links []frontier.Item
					var urls []string
					for range rapid.IntRange(0, 3).Draw(rt, "links") {
						seq++
						u := fmt.Sprintf("http://%s/%d", l.Host, seq)
						links = append(links, frontier.Item{URL: u, Depth: 2, Parent: l.Item.URL, Priority: level})
						urls = append(urls, u)
					}
					if _, err := f.Exchange(ctx, []frontier.Finished{{Lease: l, Outcome: frontier.Outcome{Stat: "ok", Fetched: true, Children: links}}}, nil, 0); err != nil {
						rt.Fatal(err)
					}
					m.push(l.Host, level, urls, depth)
				}
				sz, err := f.Sizes(ctx)
				if err != nil {
					rt.Fatal(err)
				}
				if sz.Queued != m.total() {
					rt.Fatalf("step %d: %d queued; the model holds %d", step, sz.Queued, m.total())
				}
			}
			got, err := s.Client.HGetAll(ctx, keyspace.KeysFor("pr").Queues+" levels").Result()
			if err != nil {
				rt.Fatal(err)
			}
			if want := m.levels(); fmt.Sprint(got) != fmt.Sprint(want) {
				rt.Fatalf("levels hash %v; the model's %v", got, want)
			}
			for _, h := range hosts {
				n, _ := s.Client.HGet(ctx, keyspace.KeysFor("pr").Lengths, h).Int64()
				want := 0
				for _, urls := range m[h] {
					want += len(urls)
				}
				if n != int64(want) {
					rt.Fatalf("lengths[%s] = %d; the model holds %d", h, n, want)
				}
			}
		})
	})
}

// A blocked host's URLs end with records at every priority, and a host
// that reached its cap of pages has them dropped at every priority: no
// list of any level is left behind, nor the host in the levels hash.
func TestABlockOrACapEndsEveryPriority(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		var items []frontier.Item
		for i, level := range []int{5, 0, -3, 0, 5} {
			for _, host := range []string{"blocked", "capped"} {
				items = append(items, frontier.Item{URL: fmt.Sprintf("http://%s/%d", host, i), Priority: level})
			}
		}
		e.enqueue(t, items)
		n, err := e.f.Hosts.Block(ctx, "blocked")
		if err != nil || n != 5 {
			t.Fatalf("BlockHost = %d, %v; want its 5 URLs ended", n, err)
		}
		e.f.HostPageCap = 1
		s.Client.HSet(ctx, keyspace.KeysFor("t").HostPages, "capped", 1)
		s.Client.HSet(ctx, keyspace.KeysFor("t").Capped, "capped", 1)
		if x := e.exchange(t, nil, nil, 10); len(x.Popped) != 0 {
			t.Fatalf("popped %d of a blocked and a capped host", len(x.Popped))
		}
		keys, _ := s.Client.Keys(ctx, keyspace.KeysFor("t").Queues+"*").Result()
		for _, k := range keys {
			if !strings.HasSuffix(k, " levels") || s.Client.HLen(ctx, k).Val() != 0 {
				t.Errorf("left behind: %s", k)
			}
		}
		if sz := e.sizes(t); sz.Queued != 0 {
			t.Errorf("%d still queued", sz.Queued)
		}
		st, _ := e.f.Stats(ctx)
		if st["skipped_links:max_pages_per_host"] != 5 || st["skipped"] != 5 {
			t.Errorf("stats %v; want 5 dropped at the cap and 5 blocked", st)
		}
	})
}

// A revisit keeps its URL's priority: due again, a URL of priority 5
// goes back to its level's list, before its host's URLs of 0.
func TestARevisitKeepsItsPriority(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.Continuous = true
		e.enqueue(t, []frontier.Item{{URL: "http://a/urgent", Priority: 5}})
		l := pop(t, e.f)
		if l == nil || l.Item.Priority != 5 {
			t.Fatalf("popped %+v; want the URL of priority 5", l)
		}
		finish(t, e.f, l, frontier.Outcome{Stat: "ok", Fetched: true, Visit: &recrawl.Visit{Interval: 1}, Due: time.Second})
		e.enqueue(t, []frontier.Item{{URL: "http://a/plain"}, {URL: "http://a/plain2"}})
		e.advance(1100 * time.Millisecond)
		if sw := e.sweep(t, 3, 0); sw.Revisits != 1 {
			t.Fatalf("sweep %+v; want the URL due again", sw)
		}
		x := e.exchange(t, nil, nil, 3)
		if len(x.Popped) == 0 || x.Popped[0].Item.URL != "http://a/urgent" || x.Popped[0].Item.Priority != 5 {
			t.Fatalf("popped %v first; want http://a/urgent, at priority 5", x.Popped)
		}
	})
}
