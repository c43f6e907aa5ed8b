package crawl_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

// A heartbeat reads the crawl's scope again only when seeds added hosts:
// one O(1) call (SCARD) otherwise, whatever the number of seed hosts, and
// the set itself read in batches (SSCAN), never in one call that holds
// Redis (SMEMBERS of a million hosts took 283 ms, every heartbeat of every
// worker).
func TestHeartbeatsReadTheScopeOnlyWhenSeedsAddHosts(t *testing.T) {
	s := redistest.Real(t)
	smallSite(t, s, "scope")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hostsKey := "crawl:{scope}:hosts"
	const many = 50_000
	batch := make([]any, 0, many)
	for i := 0; i < many; i++ {
		batch = append(batch, fmt.Sprintf("h%d.example", i))
	}
	if err := s.Client.SAdd(ctx, hostsKey, batch...).Err(); err != nil {
		t.Fatal(err)
	}
	o := fastOptions("w1")
	o.ExitWhenDone, o.Lease = false, 300*time.Millisecond // a heartbeat every 100 ms
	if err := s.Client.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	w, err := crawl.NewWorker(ctx, s.Client, "scope", o)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	stats := func() (scard, sscan, smembers int64) {
		st := redistest.CommandStats(t, s.Client)
		return st["scard"].Calls, st["sscan"].Calls, st["smembers"].Calls
	}
	await := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("never: %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	_, oneRead, _ := stats() // the worker's start read the set, in batches
	if oneRead < 2 {
		t.Fatalf("the start read %d hosts in %d SSCAN calls; want batches", many, oneRead)
	}
	await("five heartbeats", func() bool { n, _, _ := stats(); return n >= 5 })
	if _, sscan, smembers := stats(); sscan != oneRead || smembers != 0 {
		t.Fatalf("heartbeats read the set: SSCAN %d calls (the start's %d), SMEMBERS %d", sscan, oneRead, smembers)
	}
	s.Client.SAdd(ctx, hostsKey, "new.example") // a seed adds a host
	await("the set read again", func() bool { _, n, _ := stats(); return n > oneRead })
	reading, _, _ := stats()
	await("the next heartbeat, after the read", func() bool { n, _, _ := stats(); return n > reading })
	scard0, sscan0, _ := stats()
	await("three more heartbeats", func() bool { n, _, _ := stats(); return n >= scard0+3 })
	if _, sscan, smembers := stats(); sscan != sscan0 || smembers != 0 {
		t.Fatalf("after the one read for the new host: SSCAN %d calls (%d), SMEMBERS %d", sscan, sscan0, smembers)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A seed added to a running crawl has its site crawled whenever its first
// page is fetched: a worker that meets a page whose host is outside the
// scope it read reads the scope again before it judges the page's links.
// (It refused them until its next heartbeat read the scope: the new site
// ended at its seed.) The seed is added while the crawl is held, after the
// worker's first heartbeat and long before its next.
func TestASeedAddedToARunningCrawlHasItsLinksFollowed(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		first := smallSite(t, s, "added")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := admin.Pause(ctx, s.Client, "added", "test"); err != nil {
			t.Fatal(err)
		}
		o := fastOptions("w1")
		o.Lease = 10 * time.Minute // its heartbeats, which read the scope first, minutes apart
		w, err := crawl.NewWorker(ctx, s.Client, "added", o)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		set, err := settings.Load(ctx, s.Client, "added")
		if err != nil {
			t.Fatal(err)
		}
		fr, err := crawl.OpenFrontier(ctx, s.Client, "added", set)
		if err != nil {
			t.Fatal(err)
		}
		for alive := false; !alive; {
			notes, err := fr.Registry.WorkersNow(ctx)
			if err != nil {
				t.Fatal(err)
			}
			alive = len(notes) == 1 && notes[0].Alive // its first heartbeat: the scope read, then the registration
			if !alive {
				time.Sleep(10 * time.Millisecond)
			}
		}
		added, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 30})
		if err != nil {
			t.Fatal(err)
		}
		defer added.Close()
		seedSite(t, s, added, "added", set)
		if _, err := admin.Resume(ctx, s.Client, "added", "test"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, site := range []*testsite.Site{first, added} {
			if missing := site.Missing(); len(missing) > 0 {
				t.Fatalf("%d pages of %v never fetched, e.g. %s", len(missing), site.Roots(), missing[0])
			}
		}
	})
}
