package crawl_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier/perhost"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A host that answers 429 with Retry-After: 3 is paused for every worker:
// after that answer, no request reaches it for 3 s, from either worker.
func TestA429PausesTheHostForEveryWorker(t *testing.T) {
	wholeCrawl(t)
	s := redistest.Real(t)
	var mu sync.Mutex
	var arrivals []time.Time
	var limited time.Time // when the 429 was answered
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		now := time.Now()
		mu.Lock()
		arrivals = append(arrivals, now)
		first429 := r.URL.Path == "/p/3" && limited.IsZero()
		if first429 {
			limited = now
		}
		mu.Unlock()
		if first429 {
			w.Header().Set("Retry-After", "3")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		for i := 0; i < 12; i++ {
			fmt.Fprintf(w, `<a href="/p/%d">p</a>`, i)
		}
	}))
	defer srv.Close()
	set := settings.Default()
	set.Rate, set.Burst, set.AllowPrivate = 4, 1, true
	seed, _ := url.Parse(srv.URL + "/")
	if _, err := admin.Seed(context.Background(), s.Client, "pause", set, []*url.URL{seed}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	paused := make(chan []perhost.PausedHost, 1)
	go func() { // the pause, once set, shows in status: poll for it
		for ctx.Err() == nil {
			st, err := status.Read(ctx, s.Client, "pause")
			if err == nil && len(st.Paused) > 0 {
				paused <- st.Paused
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	runWorkers(t, ctx, s, "pause", fastOptions("w1"), fastOptions("w2"))
	mu.Lock()
	defer mu.Unlock()
	if limited.IsZero() {
		t.Fatal("the host never answered 429: the test shows nothing")
	}
	for _, at := range arrivals {
		if at.After(limited) && at.Sub(limited) < 3*time.Second {
			t.Errorf("a request reached the host %v after its 429 with Retry-After: 3", at.Sub(limited))
		}
	}
	t.Logf("%d requests; the first after the 429 came %v later", len(arrivals), firstAfter(arrivals, limited))
	select {
	case p := <-paused:
		host := strings.TrimPrefix(srv.URL, "http://")
		if len(p) != 1 || p[0].Host != host || p[0].Left <= 0 || p[0].Left > 3*time.Second || !strings.Contains(p[0].Why, "429") {
			t.Errorf("status during the pause showed %+v; want %s paused for under 3 s more, after a 429", p, host)
		}
	default:
		t.Error("status was never read during the pause")
	}
}

func firstAfter(ts []time.Time, t0 time.Time) time.Duration {
	best := time.Duration(-1)
	for _, t := range ts {
		if d := t.Sub(t0); d > 0 && (best < 0 || d < best) {
			best = d
		}
	}
	return best
}

// A run of requests that get no answer (here timeouts) pauses the host for
// every worker, as a 503 would.
func TestARunOfTimeoutsPausesTheHost(t *testing.T) {
	s := redistest.Real(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html")
			for i := 0; i < 3; i++ {
				fmt.Fprintf(w, `<a href="/hang/%d">x</a>`, i)
			}
		case strings.HasPrefix(r.URL.Path, "/hang/"):
			<-r.Context().Done() // never answers
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	set := settings.Default()
	set.Rate, set.Burst, set.AllowPrivate = 50, 5, true
	root, _ := url.Parse(srv.URL + "/")
	if _, err := admin.Seed(context.Background(), s.Client, "hang", set, []*url.URL{root}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fc := fetch.DefaultConfig()
	fc.Timeout = 200 * time.Millisecond
	o := fastOptions("w1")
	o.Fetch, o.MaxAttempts = &fc, 1 // each fails at its first timeout: three in a row
	w, err := crawl.NewWorker(ctx, s.Client, "hang", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("Run: %v, %v", err, ctx.Err())
	}
	bucket := frontierOf(t, s.Client, "hang", 1).RateKey(strings.TrimPrefix(srv.URL, "http://"))
	if n, err := s.Client.HExists(ctx, bucket, "paused_until").Result(); err != nil || !n {
		t.Fatalf("after a run of timeouts the host was never paused (%v)", err)
	}
	if w.Counters.Failed.Load() != 3 {
		t.Fatalf("%d URLs failed; want the 3 that hang", w.Counters.Failed.Load())
	}
}

// Adaptive politeness (--delay-factor): a host whose answers take 200 ms,
// at a factor of 5, gets a request a second at most — though the crawl's
// rate allows a hundred — from both workers together.
func TestASlowHostIsAskedLessOften(t *testing.T) {
	wholeCrawl(t)
	s := redistest.Real(t)
	var mu sync.Mutex
	var arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		time.Sleep(200 * time.Millisecond)
		w.Header().Set("Content-Type", "text/html")
		for i := 0; i < 6; i++ {
			fmt.Fprintf(w, `<a href="/p/%d">p</a>`, i)
		}
	}))
	defer srv.Close()
	set := settings.Default()
	set.Rate, set.Burst, set.AllowPrivate, set.DelayFactor = 100, 1, true, 5
	seed, _ := url.Parse(srv.URL + "/")
	seedAndCrawl(t, s, "adapt", set, seed)
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals) != 7 {
		t.Fatalf("%d requests; want the 7 pages", len(arrivals))
	}
	// The first page's fetch sets the interval: every later request comes
	// 5 x 200 ms after the one before (sent on the token's time, each may
	// arrive a few ms late; the rate alone would allow 10 ms).
	for i := 2; i < len(arrivals); i++ {
		if gap := arrivals[i].Sub(arrivals[i-1]); gap < 950*time.Millisecond {
			t.Errorf("request %d came %v after the one before; the slow host's interval is 5 x 200 ms", i, gap)
		}
	}
}
