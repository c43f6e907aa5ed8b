package frontier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A paused crawl's pops hand out nothing, in the same call that would pop,
// and say it is paused; a page held before the pause is still recorded,
// and its links queued. Resumed, the pops hand out URLs again. Pausing
// twice keeps the first pause's author; resuming twice changes nothing.
func TestAPausedCrawlHandsOutNothingUntilResumed(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, hostURLs("a", 3))
		held := pop(t, e.f)
		if held == nil {
			t.Fatal("want a URL before the pause")
		}
		if changed, err := e.f.Control.Pause(ctx, "alice"); err != nil || !changed {
			t.Fatalf("Pause = %v, %v; want a change", changed, err)
		}
		if changed, err := e.f.Control.Pause(ctx, "bob"); err != nil || changed {
			t.Fatalf("Pause again = %v, %v; want no change", changed, err)
		}
		h, err := e.f.Control.Paused(ctx)
		if err != nil || h == nil || h.By != "alice" || h.Shards != 1 || h.Of != 1 || time.Since(h.Since) > time.Hour {
			t.Fatalf("Paused = %+v, %v; want alice's pause, in the one shard", h, err)
		}
		x, err := e.f.Exchange(ctx, []frontier.Finished{{Lease: held, Outcome: frontier.Outcome{Stat: "ok", Fetched: true,
			Children: []frontier.Item{{URL: "http://a/child"}}}}}, nil, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(x.Popped) != 0 || !x.Info.Paused || !x.Held[0] || !x.Queued[0][0] {
			t.Fatalf("paused: popped %d, paused %v, held %v, queued %v; want nothing popped, the page recorded and its link queued",
				len(x.Popped), x.Info.Paused, x.Held, x.Queued)
		}
		if changed, err := e.f.Control.Resume(ctx); err != nil || !changed {
			t.Fatalf("Resume = %v, %v; want a change", changed, err)
		}
		if changed, err := e.f.Control.Resume(ctx); err != nil || changed {
			t.Fatalf("Resume again = %v, %v; want no change", changed, err)
		}
		if h, err := e.f.Control.Paused(ctx); err != nil || h != nil {
			t.Fatalf("Paused after resume = %+v, %v; want nil", h, err)
		}
		x = e.exchange(t, nil, nil, 5)
		if len(x.Popped) != 3 || x.Info.Paused {
			t.Fatalf("resumed: popped %d (paused %v); want the 3 URLs queued", len(x.Popped), x.Info.Paused)
		}
	})
}

// A pause of a crawl that is gone writes nothing and says so.
func TestPausingAGoneCrawlIsRefused(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		s.Client.Del(ctx, keyspace.KeysFor("t").Config)
		if _, err := e.f.Control.Pause(ctx, "alice"); !errors.Is(err, frontier.ErrGone) {
			t.Fatalf("Pause of a gone crawl: %v; want ErrGone", err)
		}
		if n := s.Client.Exists(ctx, keyspace.KeysFor("t").Paused).Val(); n != 0 {
			t.Fatal("the pause was written for a gone crawl")
		}
	})
}

// Every shard of a crawl is paused, and every shard's pops obey it; a
// worker that hears "resumed" asks every shard again at once.
func TestAPauseHoldsInEveryShard(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f := sixHosts(t, s, "sh", 3)
		if _, err := f.Control.Pause(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if h, err := f.Control.Paused(ctx); err != nil || h == nil || h.Shards != 3 || h.Of != 3 {
			t.Fatalf("Paused = %+v, %v; want all 3 shards", h, err)
		}
		x, err := f.Exchange(ctx, nil, nil, 12)
		if err != nil || len(x.Popped) != 0 || !x.Info.Paused {
			t.Fatalf("paused: popped %d (paused %v), %v; want nothing from any shard", len(x.Popped), x.Info.Paused, err)
		}
		if _, err := f.Control.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		for _, ch := range f.Wakes() { // as a worker hears "resumed" on each shard's channel
			f.Woken(ch)
		}
		got := 0
		for range 10 {
			x, err := f.Exchange(ctx, nil, nil, 12)
			if err != nil {
				t.Fatal(err)
			}
			if got += len(x.Popped); got == 12 {
				break
			}
		}
		if got != 12 {
			t.Fatalf("resumed: popped %d of 12 from the 3 shards", got)
		}
	})
}
