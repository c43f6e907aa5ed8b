package crawl_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier/control"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/tcpproxy"
	"github.com/redis/go-redis/v9"
)

// A worker cut off from Redis while `reset --force` deleted its crawl and
// a new seed made another of the same name writes nothing into the new
// one when it comes back: every exchange, sweep and heartbeat carries the
// instance id its process read, and the new crawl's is another. The
// worker stops with one line that says so, and reset reported it silent,
// not stopped. Before, its pages, links and records went into the other
// crawl.
func TestAWorkerOfAnEarlierCrawlWritesNothingIntoANewOne(t *testing.T) {
	s := redistest.Real(t)
	site := smallSite(t, s, "twice")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	proxy := tcpproxy.Start(t, s.Addr)
	c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1})
	defer c.Close()
	o := fastOptions("w1")
	o.ExitWhenDone = false
	w, err := crawl.NewWorker(ctx, c, "twice", o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	k := keyspace.KeysFor("twice")
	for n, _ := s.Client.HGet(ctx, k.Stats, "pages").Int(); n < 10; n, _ = s.Client.HGet(ctx, k.Stats, "pages").Int() {
		if ctx.Err() != nil {
			t.Fatal("no pages fetched")
		}
		time.Sleep(10 * time.Millisecond)
	}
	old := w.Settings().Instance
	proxy.Pause() // cut off: what it sends now arrives after the new crawl is made
	rep, err := admin.Reset(ctx, s.Client, "twice", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Stopped) != 0 || len(rep.Silent) != 1 || rep.Silent[0] != "w1" {
		t.Fatalf("reset: stopped %v, silent %v; want w1 silent: it never said it stopped", rep.Stopped, rep.Silent)
	}
	set := settings.Default()
	set.AllowPrivate = true
	seedSite(t, s, site, "twice", set) // the same name, another crawl
	now, _ := control.Instance(ctx, s.Client, "twice")
	if now == "" || now == old {
		t.Fatalf("the new crawl's instance %q; the old one's %q", now, old)
	}
	before := snapshot(ctx, t, s, "twice")
	proxy.Resume()
	err = <-done
	if !errors.Is(err, crawl.ErrGone) || !strings.Contains(err.Error(), `"twice" in Redis is another crawl now`) {
		t.Fatalf("Run = %v; want ErrGone saying another crawl holds the name", err)
	}
	if after := snapshot(ctx, t, s, "twice"); after != before {
		t.Fatalf("the earlier crawl's worker wrote into the new one:\nbefore %s\nafter  %s", before, after)
	}
	if alive, _ := s.Client.ZRange(ctx, k.Workers, 0, -1).Result(); len(alive) != 0 {
		t.Fatalf("it registered with the new crawl: %v", alive)
	}
}
