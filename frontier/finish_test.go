package frontier

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/redcrawl/crawler/internal/redistest"
)

// exchange.lua queues a page's links before finish.lua ends its lease,
// in the same pipeline but not in one atomic step. A pipeline cut between
// the two (finish.lua never came, nor any reply) loses no link and
// records nothing; the exchange sent again, refused for its lost reply
// (ErrReplyLost) and sent anew, finds its links seen, and still records
// the page once, with the new links its first run found (the fresh hash,
// which the resend, finding its links seen, leaves as it was), and every
// link is popped once.
func TestAPipelineCutBetweenLinksAndFinishLosesNothing(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f, sh := handoutFixture(t, s, 1)
		x, err := f.Exchange(ctx, nil, nil, 1)
		if err != nil || len(x.Popped) != 1 {
			t.Fatalf("pop: %+v, %v; want the one URL", x.Popped, err)
		}
		a := x.Popped[0]
		kids := []Item{{URL: "http://h0.example/1"}, {URL: "http://h0.example/2"}, {URL: "http://h0.example/"}} // the last seen already
		done := []Finished{{Lease: a, Outcome: Outcome{Children: kids, Stat: "done", Record: []byte(`{"url":"a"}`), Fetched: true}}}
		p := prepared(t, s, sh, done)
		if p.ends == nil {
			t.Fatal("no finish.lua for a finished page")
		}
		pipe := s.Client.Pipeline()
		p.call.Queue(ctx, pipe) // exchange.lua alone: the pipeline was cut after it, its reply lost
		pipe.Exec(ctx)
		if _, _, err := p.call.Result(ctx); err != nil {
			t.Fatalf("exchange.lua: %v", err)
		}
		if n := s.Client.XLen(ctx, sh.keys.Results).Val(); n != 0 {
			t.Fatalf("%d records after exchange.lua alone; want none: the lease is finish.lua's to end", n)
		}
		if _, err := s.Client.ZScore(ctx, sh.keys.Leases, a.Member()).Result(); err != nil {
			t.Fatalf("the lease after exchange.lua alone: %v; want it held", err)
		}
		if got := s.Client.HGet(ctx, sh.keys.FreshOf(sh.process()), a.ID).Val(); got != "2" {
			t.Fatalf("fresh count %q; want 2 (two links new, one seen)", got)
		}
		if _, err := f.Exchange(ctx, done, nil, 0); !errors.Is(err, ErrReplyLost) {
			t.Fatalf("the exchange sent again: %v; want ErrReplyLost (Redis counted the lost one)", err)
		}
		y, err := f.Exchange(ctx, done, nil, 0)
		if err != nil || len(y.Held) != 1 || !y.Held[0] {
			t.Fatalf("the exchange sent anew: %+v, %v; want its page recorded", y.Held, err)
		}
		msgs := s.Client.XRange(ctx, sh.keys.Results, "-", "+").Val()
		if len(msgs) != 1 || msgs[0].Values["new_links"] != "2" {
			t.Fatalf("records %v; want one, with the 2 new links the first run found", msgs)
		}
		if s.Client.Exists(ctx, sh.keys.FreshOf(sh.process())).Val() != 0 {
			t.Fatal("the fresh count outlived the lease it counts for")
		}
		var urls []string
		for {
			z, err := f.Exchange(ctx, nil, nil, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(z.Popped) == 0 {
				break
			}
			for _, l := range z.Popped {
				urls = append(urls, l.Item.URL)
			}
		}
		sort.Strings(urls)
		if want := "[http://h0.example/1 http://h0.example/2]"; fmt.Sprint(urls) != want {
			t.Fatalf("popped %v; want %s, each once", urls, want)
		}
	})
}

// prepared is the part of one exchange that ends done's leases, its calls
// made (not sent) and the exchange's scripts loaded: a test sends some of
// them, as a pipeline cut short would.
func prepared(t *testing.T, s *redistest.Server, sh *shard, done []Finished) *part {
	t.Helper()
	p := &part{done: done, away: make([]bool, len(done))}
	if err := sh.prepare(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := loadExchange(context.Background(), s.Client); err != nil {
		t.Fatal(err)
	}
	return p
}

// An exchange of thousands of finished pages (5,000 on redis-server,
// forty times what a worker sends at most, crawl/pace's maxSend; each
// with a new link) counts every page's new link in its record, through
// the fresh hash. (miniredis's Lua runs out of registry sooner, in code
// that ends leases: it takes 1,000.)
func TestAnExchangeOfThousandsOfPagesCountsEachPagesNewLinks(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		n := 5000
		if s.Mini != nil {
			n = 1000
		}
		f, _ := handoutFixture(t, s, n)
		var popped []*Lease
		for len(popped) < n {
			x, err := f.Exchange(ctx, nil, nil, min(500, n-len(popped)))
			if err != nil || len(x.Popped) == 0 {
				t.Fatalf("pop: %d of %d, %v", len(popped), n, err)
			}
			popped = append(popped, x.Popped...)
		}
		done := make([]Finished, n)
		for i, l := range popped {
			done[i] = Finished{Lease: l, Outcome: Outcome{Stat: "ok", Fetched: true, Record: []byte(l.Item.URL),
				Children: []Item{{URL: l.Item.URL + "next"}}}}
		}
		x, err := f.Exchange(ctx, done, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, held := range x.Held {
			if !held {
				t.Fatalf("page %d not recorded", i)
			}
		}
		sh := f.fs[0]
		msgs := s.Client.XRange(ctx, sh.keys.Results, "-", "+").Val()
		if len(msgs) != n {
			t.Fatalf("%d records; want %d", len(msgs), n)
		}
		for _, m := range msgs {
			if m.Values["new_links"] != "1" {
				t.Fatalf("record %v; want its one new link counted", m.Values)
			}
		}
	})
}
