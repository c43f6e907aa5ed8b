package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/dashboard"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "crawl a local test site with several workers and show what each primitive did",
		Description: "Everything runs in this process: an embedded Redis (unless --redis is given on its command line;\n" +
			"CRAWLER_REDIS is not used), a crawl named demo-XXXXXXXX (deleted at the end), the test\n" +
			"site on loopback addresses, and several workers. Halfway through, the worker that is\n" +
			"the scheduler stops, and another takes over under a higher epoch.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "workers", Value: 3, Usage: "worker processes to simulate"},
			&cli.IntFlag{Name: "hosts", Value: 3, Usage: "test site hosts"},
			&cli.IntFlag{Name: "pages", Value: 60, Usage: "pages per host"},
			&cli.Float64Flag{Name: "rate", Value: 20, Usage: "requests per second per host"},
			&cli.IntFlag{Name: "burst", Value: 2, Usage: "burst per host"},
			&cli.DurationFlag{Name: "latency", Value: 5 * time.Millisecond, Usage: "test site response delay"},
			&cli.StringFlag{Name: "dashboard", Value: "127.0.0.1:0", Usage: "serve the live dashboard on this address (port 0: a free one; 'off': none)"},
			&cli.DurationFlag{Name: "linger", Usage: "keep the dashboard up this long after the crawl (on a terminal: until Ctrl-C)"},
		},
		Action: runDemo,
	}
}

func runDemo(c *cli.Context) error {
	out := c.App.Writer
	if c.Int("workers") < 1 || c.Int("hosts") < 1 || c.Int("pages") < 1 || !(c.Float64("rate") > 0) || c.Int("burst") < 1 {
		return fmt.Errorf("demo: --workers, --hosts, --pages, --rate and --burst must all be positive")
	}
	// The demo never touches a crawl of the user's: it uses its own
	// embedded Redis unless --redis was given on its command line (not
	// just in the environment), and a name of its own, deleted after.
	rdb, closeRedis, err := connectOrEmbedIf(c, argGiven(c, "redis"))
	if err != nil {
		return err
	}
	defer closeRedis()
	site, err := testsite.Start(testsite.Config{Hosts: c.Int("hosts"), Pages: c.Int("pages"), Latency: c.Duration("latency")})
	if err != nil {
		return err
	}
	defer site.Close()
	var suffix [4]byte
	rand.Read(suffix[:])
	name := "demo-" + hex.EncodeToString(suffix[:])
	ctx := c.Context
	defer crawl.Reset(context.WithoutCancel(ctx), rdb, name, true)
	s := crawl.DefaultSettings()
	s.Rate, s.Burst, s.AllowPrivate, s.ExpectedURLs, s.FPRate = c.Float64("rate"), c.Int("burst"), true, 10_000, 0.001
	var seeds []*url.URL
	for _, r := range site.Roots() {
		u, _ := url.Parse(r)
		seeds = append(seeds, u)
	}
	if _, err := crawl.Seed(ctx, rdb, name, s, seeds); err != nil {
		return err
	}
	stopDashboard, err := demoDashboard(c, rdb, name)
	if err != nil {
		return err
	}
	defer stopDashboard()
	truth := site.Truth()
	fmt.Fprintf(out, "test site: %d hosts (%s), %d pages each; %d URLs a correct crawl must fetch\n",
		len(site.Hosts()), strings.Join(site.Hosts(), " "), c.Int("pages"), len(truth))
	fmt.Fprintf(out, "crawl %q: %d workers, %.4g requests/s per host (burst %d), shared through Redis\n\n", name, c.Int("workers"), s.Rate, s.Burst)

	start := time.Now()
	workers, epochs, err := startDemoWorkers(ctx, rdb, name, c.Int("workers"), out)
	if err != nil {
		return err
	}
	if err := superviseDemo(ctx, rdb, name, workers, int64(len(truth)/2), out); err != nil {
		return err
	}
	elapsed := time.Since(start)
	st, err := crawl.ReadStatus(ctx, rdb, name)
	if err != nil {
		return err
	}
	report(out, st, site, truth, epochs.list(), elapsed, s)
	return nil
}

// demoWorker is a worker the demo runs in this process.
type demoWorker struct {
	id     string
	cancel context.CancelFunc
	done   chan struct{}
}

// demoEpochs lists the scheduler's epochs as the workers log them.
type demoEpochs struct {
	mu     sync.Mutex
	epochs []string
}

func (e *demoEpochs) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.epochs...)
}

// startDemoWorkers starts n workers of crawl name, each saying when it
// becomes the scheduler.
func startDemoWorkers(ctx context.Context, rdb redis.UniversalClient, name string, n int, out io.Writer) ([]*demoWorker, *demoEpochs, error) {
	epochs := &demoEpochs{}
	onLeading := func(id string) *slog.Logger {
		return slog.New(leadingHandler(func(epoch int64) {
			epochs.mu.Lock()
			epochs.epochs = append(epochs.epochs, fmt.Sprintf("epoch %d (%s)", epoch, id))
			epochs.mu.Unlock()
			fmt.Fprintf(out, "  leader: %s is the scheduler, epoch %d\n", id, epoch)
		}))
	}
	var workers []*demoWorker
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
		r := &demoWorker{id: id, cancel: cancel, done: make(chan struct{})}
		go func() { defer close(r.done); w.Run(wctx) }()
		workers = append(workers, r)
	}
	return workers, epochs, nil
}

// superviseDemo waits for the workers to finish the crawl and, once half
// pages are in, stops whichever worker is the scheduler: another takes
// over.
func superviseDemo(ctx context.Context, rdb redis.UniversalClient, name string, workers []*demoWorker, half int64, out io.Writer) error {
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
		st, err := crawl.ReadStatus(ctx, rdb, name)
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

func report(out io.Writer, st *crawl.Status, site *testsite.Site, truth []string, epochs []string, elapsed time.Duration, s crawl.Settings) {
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

// demoDashboard serves the demo crawl's dashboard and says where; the
// function it returns keeps it up as --linger says, then stops it.
func demoDashboard(c *cli.Context, rdb redis.UniversalClient, name string) (func(), error) {
	addr := c.String("dashboard")
	if addr == "off" || addr == "" {
		return func() {}, nil
	}
	if err := dashboard.CheckListen(addr, ""); err != nil {
		return nil, usage(fmt.Errorf("--dashboard: %v", strings.TrimPrefix(err.Error(), "--listen ")))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--dashboard: %v", err)
	}
	serving, stopServing := context.WithCancel(c.Context)
	wait := serveDashboard(serving, ln, rdb, dashboard.Config{Crawl: name})
	out := c.App.Writer
	fmt.Fprintf(out, "dashboard: %s (live: progress, workers, the hosts' token buckets, the scheduler's lock and epoch, the event log)\n", dashboardURL(ln.Addr(), false))
	return func() {
		switch {
		case isTerminal(out) && c.Duration("linger") == 0:
			fmt.Fprintf(out, "\nthe dashboard stays up with the crawl's final state: Ctrl-C ends the demo\n")
			<-c.Context.Done()
		case c.Duration("linger") > 0:
			sleep(c.Context, c.Duration("linger"))
		}
		stopServing()
		wait()
	}, nil
}
