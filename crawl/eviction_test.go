package crawl_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/redisconn"
)

// A Redis with a memory limit and an evicting policy is refused with what
// to set; without a limit, or with noeviction, it is fine. The embedded
// Redis (miniredis) does not report a policy and is never refused.
func TestEvictingRedisIsRefused(t *testing.T) {
	ctx := context.Background()
	if err := redisconn.CheckEviction(ctx, redistest.Mini(t).Client); err != nil {
		t.Fatalf("miniredis: %v", err)
	}
	s := redistest.Real(t)
	for _, tc := range []struct {
		maxmemory, policy string
		refused           bool
	}{
		{"0", "allkeys-lru", false}, // no limit: nothing is ever evicted
		{"100mb", "noeviction", false},
		{"100mb", "allkeys-lru", true},
		{"100mb", "volatile-lru", true}, // the lock and counters have TTLs
		{"100mb", "allkeys-random", true},
		{"100mb", "volatile-ttl", true},
	} {
		s.Client.ConfigSet(ctx, "maxmemory", tc.maxmemory)
		s.Client.ConfigSet(ctx, "maxmemory-policy", tc.policy)
		err := redisconn.CheckEviction(ctx, s.Client)
		if got := errors.Is(err, crawl.ErrEvictingRedis); got != tc.refused {
			t.Errorf("maxmemory %s, %s: %v; refused = %v, want %v", tc.maxmemory, tc.policy, err, got, tc.refused)
		}
		if tc.refused && (!strings.Contains(err.Error(), "maxmemory-policy noeviction") || !strings.Contains(err.Error(), tc.policy) ||
			!strings.Contains(err.Error(), "--allow-eviction")) {
			t.Errorf("%s: %q does not say what is set, what to set, and how to go on anyway", tc.policy, err)
		}
	}
}

// Keys evicted while a worker runs are said at once, at error level, and
// counted in its metrics; when the crawl itself is evicted, the worker's
// error says so instead of blaming a reset.
func TestEvictionsDuringACrawlAreLoud(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	if _, err := admin.Seed(ctx, s.Client, "evict", settings.Default(), nil); err != nil {
		t.Fatal(err)
	}
	o := fastOptions("w1")
	o.ExitWhenDone = false
	o.Lease = 300 * time.Millisecond // a heartbeat every 100 ms
	o.EvictionCheck = time.Millisecond
	var logs syncBuf
	o.Log = slog.New(slog.NewTextHandler(&logs, nil))
	w, err := crawl.NewWorker(ctx, s.Client, "evict", o)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	// Tight memory, evicting keys with a TTL first (only the junk's and
	// the lock's here): fill it until Redis evicts.
	s.Client.ConfigSet(ctx, "maxmemory", fmt.Sprint(s.UsedMemory(t)+2<<20))
	s.Client.ConfigSet(ctx, "maxmemory-policy", "volatile-random")
	big := strings.Repeat("x", 64<<10)
	for i := 0; i < 100; i++ {
		s.Client.Set(ctx, fmt.Sprintf("junk:%d", i), big, time.Hour)
	}
	awaitLog(t, &logs, "Redis evicted keys during the crawl")
	if got := scrapeGatherer(t, w, "redcrawl_redis_evicted_keys_total"); got < 1 {
		t.Errorf("redcrawl_redis_evicted_keys_total = %v after evictions", got)
	}
	if !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("evictions logged below error level:\n%s", logs.String())
	}
	// Evict anything, the crawl itself too: the worker stops and says why.
	s.Client.ConfigSet(ctx, "maxmemory-policy", "allkeys-random")
	fr := frontierOf(t, s.Client, "evict", 1)
	for i := 100; i < 2000; i++ {
		if ok, _ := fr.Exists(ctx); !ok {
			break
		}
		s.Client.Set(ctx, fmt.Sprintf("junk:%d", i), big, 0)
	}
	select {
	case err := <-done:
		if !errors.Is(err, crawl.ErrGone) || !strings.Contains(err.Error(), "evicted") || !strings.Contains(err.Error(), "noeviction") {
			t.Fatalf("the worker of an evicted crawl: %v; want ErrGone saying Redis evicted keys", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker of an evicted crawl did not stop")
	}
}

// scrapeGatherer reads one sample of the worker's metrics.
func scrapeGatherer(t *testing.T, w *crawl.Worker, name string) float64 {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(w.Metrics(), promhttp.HandlerOpts{}))
	defer srv.Close()
	return scrape(t, srv.URL, name)[name]
}
