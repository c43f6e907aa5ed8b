// Package demo runs `crawler demo`: a crawl of a local test site by
// several workers in one process, on a Redis it is given (the CLI's
// embedded one by default), with the scheduler stopped halfway so that
// another worker takes over under a higher epoch, and a report of what
// each primitive did: the leader's terms, the Bloom filter's refusals and
// false-positive rate, each host's busiest second against its bucket,
// robots.txt kept.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// Config is the demo's crawl: workers, the test site's size and latency,
// and each host's rate and burst.
type Config struct {
	Workers, Hosts, Pages int
	Rate                  float64 // requests a second a host
	Burst                 int
	Latency               time.Duration // the test site's, a response
}

// ErrConfig: a Config number that is not positive.
var ErrConfig = errors.New("demo: --workers, --hosts, --pages, --rate and --burst must all be positive")

// Check refuses a Config with a number that is not positive (ErrConfig).
func (cfg Config) Check() error {
	if cfg.Workers < 1 || cfg.Hosts < 1 || cfg.Pages < 1 || !(cfg.Rate > 0) || cfg.Burst < 1 {
		return ErrConfig
	}
	return nil
}

// Run runs the demo on rdb, printing as it goes and its report at the
// end to out. Its crawl, demo-XXXXXXXX, is deleted when it returns.
// seeded, when not nil, is called once the crawl is seeded, with its
// name (the CLI serves the dashboard there); the function it returns is
// called as Run returns.
func Run(ctx context.Context, rdb redis.UniversalClient, cfg Config, out io.Writer, seeded func(name string) (func(), error)) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	site, err := testsite.Start(testsite.Config{Hosts: cfg.Hosts, Pages: cfg.Pages, Latency: cfg.Latency})
	if err != nil {
		return err
	}
	defer site.Close()
	var suffix [4]byte
	rand.Read(suffix[:])
	name := "demo-" + hex.EncodeToString(suffix[:])
	defer admin.Reset(context.WithoutCancel(ctx), rdb, name, true)
	s := settings.Default()
	s.Rate, s.Burst, s.AllowPrivate, s.ExpectedURLs, s.FPRate = cfg.Rate, cfg.Burst, true, 10_000, 0.001
	var seeds []*url.URL
	for _, r := range site.Roots() {
		u, _ := url.Parse(r)
		seeds = append(seeds, u)
	}
	if _, err := admin.Seed(ctx, rdb, name, s, seeds); err != nil {
		return err
	}
	if seeded != nil {
		done, err := seeded(name)
		if err != nil {
			return err
		}
		defer done()
	}
	truth := site.Truth()
	fmt.Fprintf(out, "test site: %d hosts (%s), %d pages each; %d URLs a correct crawl must fetch\n",
		len(site.Hosts()), strings.Join(site.Hosts(), " "), cfg.Pages, len(truth))
	fmt.Fprintf(out, "crawl %q: %d workers, %.4g requests/s per host (burst %d), shared through Redis\n\n", name, cfg.Workers, s.Rate, s.Burst)

	start := time.Now()
	workers, terms, err := startWorkers(ctx, rdb, name, cfg.Workers, out)
	if err != nil {
		return err
	}
	if err := supervise(ctx, rdb, name, workers, int64(len(truth)/2), out); err != nil {
		return err
	}
	elapsed := time.Since(start)
	st, err := status.Read(ctx, rdb, name)
	if err != nil {
		return err
	}
	report(out, st, site, truth, terms.read(), elapsed, s)
	return nil
}

// worker is a worker the demo runs in this process.
type worker struct {
	id     string
	cancel context.CancelFunc
	done   chan struct{}
}

// epochs lists the scheduler's epochs as the workers log them.
type epochs struct {
	mu   sync.Mutex
	list []string
}

func (e *epochs) read() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.list...)
}

// startWorkers starts n workers of crawl name, each saying when it
// becomes the scheduler.
func startWorkers(ctx context.Context, rdb redis.UniversalClient, name string, n int, out io.Writer) ([]*worker, *epochs, error) {
	terms := &epochs{}
	onLeading := func(id string) *slog.Logger {
		return slog.New(leadingHandler(func(epoch int64) {
			terms.mu.Lock()
			terms.list = append(terms.list, fmt.Sprintf("epoch %d (%s)", epoch, id))
			terms.mu.Unlock()
			fmt.Fprintf(out, "  leader: %s is the scheduler, epoch %d\n", id, epoch)
		}))
	}
	var workers []*worker
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("worker-%d", i)
		wctx, cancel := context.WithCancel(ctx)
		w, err := crawl.NewWorker(wctx, rdb, name, crawl.Options{ID: id, Concurrency: 4, ExitWhenDone: true, Log: onLeading(id),
			Leader: leader.ConfigForTTL(2 * time.Second), SweepInterval: 100 * time.Millisecond, Lease: 3 * time.Second})
		if err != nil {
			cancel()
			for _, r := range workers {
				r.cancel()
				<-r.done
			}
			return nil, nil, err
		}
		r := &worker{id: id, cancel: cancel, done: make(chan struct{})}
		go func() { defer close(r.done); w.Run(wctx) }()
		workers = append(workers, r)
	}
	return workers, terms, nil
}

// supervise waits for the workers to finish the crawl and, once half
// pages are in, stops whichever worker is the scheduler: another takes
// over.
func supervise(ctx context.Context, rdb redis.UniversalClient, name string, workers []*worker, half int64, out io.Writer) error {
	stopped := ""
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for alive := len(workers); alive > 0; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		alive = 0
		for _, w := range workers {
			select {
			case <-w.done:
			default:
				alive++
			}
		}
		if stopped != "" || len(workers) == 1 {
			continue
		}
		st, err := status.Read(ctx, rdb, name)
		if err != nil || st.Counters["pages"] < half || st.Leader == nil {
			continue
		}
		for _, w := range workers {
			if w.id == st.Leader.ID {
				stopped = w.id
				fmt.Fprintf(out, "  %d pages in: stopping %s, the scheduler (its URLs in flight finish first)\n", st.Counters["pages"], w.id)
				w.cancel()
			}
		}
	}
	return nil
}

// report says what each primitive did.
func report(out io.Writer, st *status.Status, site *testsite.Site, truth []string, epochs []string, elapsed time.Duration, s settings.Settings) {
	ss := site.Stats()
	got := len(truth) - len(site.Missing())
	fmt.Fprintf(out, "\ndone in %.1fs: %d of %d truth URLs fetched, %d requests in all, no URL fetched more than %d times\n",
		elapsed.Seconds(), got, len(truth), len(ss.Fetched), ss.MaxFetchesPerURL)
	fmt.Fprintf(out, "\nleader (renewable lock + fencing): %d terms: %s\n", len(epochs), strings.Join(epochs, ", "))
	fmt.Fprintf(out, "  every sweep of the frontier ran as a fenced script: a stale epoch's writes are refused\n")
	b := st.Bloom
	fmt.Fprintf(out, "\ndedup (Bloom filter in Redis bitmaps): %d links offered to the frontier, %d new, %d turned away as already seen\n",
		st.Counters["offered"], st.Counters["enqueued"], st.Counters["offered"]-st.Counters["enqueued"])
	fmt.Fprintf(out, "  %d bits in %d layer(s), k=%d, estimated false-positive rate %.5f%% (target %.3g%%)\n",
		b.Bits, len(b.Layers), b.Layers[0].K, 100*b.EstimatedFPRate, 100*s.FPRate)
	fmt.Fprintf(out, "\npoliteness (token bucket in Lua, one per host, shared by all workers): limit %.4g/s, burst %d\n", s.Rate, s.Burst)
	hosts := make([]string, 0, len(ss.Hosts))
	for h := range ss.Hosts {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		hs := ss.Hosts[h]
		verdict := "within"
		if float64(hs.MaxPerSecond) > s.Rate+float64(s.Burst) {
			verdict = "OVER"
		}
		fmt.Fprintf(out, "  %s: %d requests, at most %d in any one second (%s rate+burst = %.4g)\n",
			h, hs.Requests, hs.MaxPerSecond, verdict, s.Rate+float64(s.Burst))
	}
	if len(ss.Disallowed) == 0 {
		fmt.Fprintf(out, "  robots.txt: no disallowed URL was fetched\n")
	} else {
		fmt.Fprintf(out, "  robots.txt: %d disallowed URLs were fetched!\n", len(ss.Disallowed))
	}
}

// leadingHandler is a slog handler that sees only the line a worker logs
// when it becomes the scheduler, and calls f with its epoch.
type leadingHandler func(epoch int64)

func (h leadingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h leadingHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h leadingHandler) WithGroup(string) slog.Handler                { return h }
func (h leadingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == crawl.LogLeading {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "epoch" {
				h(a.Value.Int64())
			}
			return true
		})
	}
	return nil
}
