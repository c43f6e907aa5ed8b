package crawl_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

// A Redis out of memory under noeviction refuses every write, heartbeats
// included, so registrations lapse while the workers live on. Nothing may
// read that as "gone": status says Redis is out of memory and which
// workers' liveness is unknown, reset without --force refuses, and workers
// wait the OOM out, the one that was running and the one started during
// it alike; when memory frees, the crawl ends with nothing missing.
// (Real Redis only: the embedded one has no memory limit.)
func TestOutOfMemoryRedisDoesNotMakeWorkersLookGone(t *testing.T) {
	s := redistest.Real(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 40, Latency: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate = math.Inf(1), true
	seedSite(t, s, site, "oom", set)
	var logs syncBuf
	o1 := fastOptions("w1")
	o1.Concurrency, o1.Log = 1, slog.New(slog.NewTextHandler(&logs, nil))
	w1, err := crawl.NewWorker(ctx, s.Client, "oom", o1)
	if err != nil {
		t.Fatal(err)
	}
	done1 := make(chan error, 1)
	go func() { done1 <- w1.Run(ctx) }()
	for w1.Counters.OK.Load() < 3 {
		select {
		case err := <-done1:
			t.Fatalf("w1 ended before the OOM: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	s.Client.ConfigSet(ctx, "maxmemory-policy", "noeviction")
	s.Client.ConfigSet(ctx, "maxmemory", fmt.Sprint(s.UsedMemory(t)/2))
	if err := s.Client.Set(ctx, "probe", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("a write on the full Redis: %v; want OOM", err)
	}
	o2 := fastOptions("w2")
	o2.Log = o1.Log
	started2 := make(chan *crawl.Worker, 1)
	done2 := make(chan error, 1)
	go func() {
		w2, err := crawl.NewWorker(ctx, s.Client, "oom", o2)
		if err != nil {
			done2 <- fmt.Errorf("NewWorker: %w", err)
			return
		}
		started2 <- w2
		done2 <- w2.Run(ctx)
	}()
	// Until w1's registration has lapsed in Redis, as heartbeats are refused.
	fr := frontierOf(t, s.Client, "oom", 1)
	for {
		alive, err := fr.Registry.Workers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(alive) == 0 {
			break
		}
		select {
		case err := <-done1:
			t.Fatalf("w1 ended during the OOM: %v", err)
		case err := <-done2:
			t.Fatalf("w2, started during the OOM, ended: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	st, err := status.Read(ctx, s.Client, "oom")
	if err != nil {
		t.Fatal(err)
	}
	if !st.RedisOutOfMemory || strings.Join(st.WorkersUnknown, ",") != "w1" {
		t.Fatalf("status during the OOM: out of memory %v, liveness unknown %v; want true, [w1]", st.RedisOutOfMemory, st.WorkersUnknown)
	}
	if text := st.String(); !strings.Contains(text, "out of memory") || !strings.Contains(text, "w1") {
		t.Fatalf("status text during the OOM does not say so:\n%s", text)
	}
	rep, err := admin.Reset(ctx, s.Client, "oom", false)
	if !errors.Is(err, crawl.ErrWorkersAlive) || rep.Deleted != 0 || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("reset during the OOM: %+v, %v; want it refused, nothing deleted, saying why", rep, err)
	}
	if !strings.Contains(logs.String(), "out of memory") {
		t.Errorf("the workers did not say Redis is out of memory; log:\n%s", logs.String())
	}
	s.Client.ConfigSet(ctx, "maxmemory", "0")
	if err := <-done1; err != nil {
		t.Fatalf("w1 after the OOM: %v", err)
	}
	if err := <-done2; err != nil {
		t.Fatalf("w2 after the OOM: %v", err)
	}
	<-started2
	if missing := site.Missing(); len(missing) > 0 {
		t.Fatalf("%d truth URLs never fetched after the OOM: %v", len(missing), missing[:min(5, len(missing))])
	}
}
