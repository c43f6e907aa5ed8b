package crawl_test

import (
	"bufio"
	"context"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redcrawl/crawler/leader"
)

// scrape reads the samples of /metrics whose names start with prefix, by
// their name and labels as written.
func scrape(t *testing.T, url, prefix string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

func sum(m map[string]float64, prefix string) float64 {
	var total float64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			total += v
		}
	}
	return total
}

// /metrics, scraped during a crawl and after it, agrees with the crawl's
// own numbers.
func TestMetricsAgreeWithTheCrawl(t *testing.T) {
	s := redistest.Real(t)
	site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 60, Latency: 5 * time.Millisecond, ListenBase: "127.0.0.100"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate = math.Inf(1), true
	seedSite(t, s, site, "metrics", set)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := crawl.NewWorker(ctx, s.Client, "metrics", fastOptions("w1"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(promhttp.HandlerFor(w.Metrics(), promhttp.HandlerOpts{}))
	defer srv.Close()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	// During the crawl: pages appear, and the frontier is read from Redis.
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := scrape(t, srv.URL, "redcrawl_")
		if sum(m, "redcrawl_pages_fetched_total") > 0 && m["redcrawl_redis_up"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pages in /metrics during the crawl: %v", m)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	m := scrape(t, srv.URL, "redcrawl_")
	st, err := status.Read(ctx, s.Client, "metrics")
	if err != nil {
		t.Fatal(err)
	}
	for outcome, want := range map[string]int64{"ok": w.Counters.OK.Load(), "http_error": w.Counters.HTTPError.Load(),
		"skipped": w.Counters.Skipped.Load(), "failed": w.Counters.Failed.Load()} {
		if got := sum(m, `redcrawl_pages_fetched_total{outcome="`+outcome+`"`); int64(got) != want || want != st.Counters[outcome] {
			t.Errorf("%s: /metrics %v, the worker %d, the crawl %d", outcome, got, want, st.Counters[outcome])
		}
	}
	if m[`redcrawl_frontier_urls{state="queued"}`] != 0 || m["redcrawl_exchange_duration_seconds_count"] == 0 ||
		m["redcrawl_fetch_duration_seconds_count"] == 0 || m["redcrawl_is_leader"] != 0 || m["redcrawl_leader_epoch"] < 1 {
		t.Errorf("after the crawl: %v", m)
	}
	// One worker, two hosts: robots.txt fetched once per host, every other
	// check answered from the process's cache or Redis.
	if f, other := m[`redcrawl_robots_lookups_total{source="fetched"}`],
		m[`redcrawl_robots_lookups_total{source="local"}`]+m[`redcrawl_robots_lookups_total{source="redis"}`]; f != 2 || other == 0 {
		t.Errorf("robots.txt lookups: %v fetched, %v from a cache; want 2 fetched, the rest cached", f, other)
	}
	// The crawl's per-status counts add up to its pages, and agree with
	// the status classes of /metrics.
	var byStatus int64
	for name, n := range st.Counters {
		if strings.HasPrefix(name, "status:") {
			byStatus += n
		}
	}
	if byStatus != st.Counters["pages"] || float64(st.Counters["status:200"]) != sum(m, `redcrawl_pages_fetched_total{outcome="ok",status_class="2xx"`) {
		t.Errorf("status counts %v; /metrics 2xx %v", st.Counters, sum(m, `redcrawl_pages_fetched_total{outcome="ok",status_class="2xx"`))
	}
	if err := w.Healthy(ctx); err != nil {
		t.Errorf("Healthy: %v", err)
	}
	// The example dashboard asks only for metrics a worker defines.
	dash, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range regexp.MustCompile(`redcrawl_[a-z_]+`).FindAllString(string(dash), -1) {
		if !strings.Contains(string(src), `"`+strings.TrimSuffix(name, "_bucket")+`"`) {
			t.Errorf("docs/grafana-dashboard.json uses %s, which crawl/metrics.go does not define", name)
		}
	}
}

// A scheduler whose epoch was overtaken (another worker took the lock
// while this one was paused) has its next sweep refused by the fence: it
// says so in its log, counts it in /metrics, and stops leading.
func TestStaleSchedulerIsFencedAndCounted(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		if _, err := admin.Seed(ctx, s.Client, "fenced", settings.Default(), nil); err != nil {
			t.Fatal(err)
		}
		o := fastOptions("w1")
		o.ExitWhenDone = false
		o.Leader = leader.ConfigForTTL(time.Minute) // it keeps the lock: only the fence can stop it
		var logs syncBuf
		o.Log = slog.New(slog.NewTextHandler(&logs, nil))
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		w, err := crawl.NewWorker(wctx, s.Client, "fenced", o)
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan struct{})
		go func() { defer close(ran); w.Run(wctx) }()
		defer func() { cancel(); <-ran }()
		srv := httptest.NewServer(promhttp.HandlerFor(w.Metrics(), promhttp.HandlerOpts{}))
		defer srv.Close()
		awaitLog(t, &logs, crawl.LogLeading)
		// A newer epoch, as a new leader's lock would mint.
		if err := s.Client.Incr(ctx, leader.EpochKey(keyspace.LeaderKey("fenced"))).Err(); err != nil {
			t.Fatal(err)
		}
		awaitLog(t, &logs, crawl.LogFenced)
		if got := scrape(t, srv.URL, "redcrawl_scheduler_fenced_total")["redcrawl_scheduler_fenced_total"]; got != 1 {
			t.Fatalf("redcrawl_scheduler_fenced_total = %v, want 1\n%s", got, logs.String())
		}
		if !strings.Contains(logs.String(), "epoch=1") {
			t.Fatalf("the fenced line does not name the stale epoch:\n%s", logs.String())
		}
	})
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// awaitLog waits (bounded) until the log holds msg: the worker's own
// report is the event.
func awaitLog(t *testing.T, logs *syncBuf, msg string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), msg) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log within 10s:\n%s", msg, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
