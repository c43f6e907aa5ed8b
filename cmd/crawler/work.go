package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/dashboard"
	"github.com/redcrawl/crawler/render"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

func workFlags() []cli.Flag {
	return withEnv(append([]cli.Flag{
		&cli.IntFlag{Name: "concurrency", Aliases: []string{"c"}, Value: 8,
			Usage: fmt.Sprintf("pages fetched at once by this process (1 to %d; for more, run more processes)", crawl.MaxConcurrency)},
		&cli.StringFlag{Name: "out", Usage: "also append result records to FILE as JSON lines, every one; {id} in FILE is the worker's id " +
			"('crawl' with the embedded Redis: CRAWL.jsonl by default, as that Redis ends with the process)"},
		&cli.StringFlag{Name: "id", Usage: "this worker's name in status and leader listings (default host:pid)"},
		redisWaitFlag(time.Minute),
		allowEvictionFlag(),
		&cli.StringFlag{Name: "warc-dir", Usage: "archive every fetch (request and response as sent) in WARC 1.1 files in DIR"},
		&cli.StringFlag{Name: "warc-max-size", Value: "1GiB", Usage: "start a new WARC file past this size (e.g. 500MB, 1GiB)"},
		&cli.StringFlag{Name: "warc-prefix", Value: "redcrawl", Usage: "WARC file names are PREFIX-TIMESTAMP-SERIAL-WORKERID.warc.gz"},
		&cli.StringFlag{Name: "proxy", Usage: "send every request through this proxy, http://, https:// or socks5://HOST:PORT (default: HTTP_PROXY, HTTPS_PROXY, NO_PROXY); " +
			"the target's name is resolved and judged here and the proxy asked for a tunnel (CONNECT) to that address, so private targets stay refused " +
			"without --allow-private; the proxy must allow CONNECT to port 80 for http:// URLs"},
		&cli.StringFlag{Name: "dns", Usage: "ask this DNS server (HOST:PORT) instead of the system's; answers are cached as long as their TTLs say, either way"},
		&cli.BoolFlag{Name: "cookies", Usage: "keep the cookies hosts set, per host, for this worker's life"},
		&cli.IntFlag{Name: "max-attempts", Value: 3, Usage: "tries per URL on transient failures (timeouts, 429, 5xx) before it fails"},
		&cli.StringFlag{Name: "metrics-addr", Usage: "serve Prometheus /metrics and /healthz on HOST:PORT (e.g. :9090), and the crawl's " +
			"read-only dashboard at / (as 'crawler dashboard': hosts, workers and the event log, no secrets) where HOST is loopback " +
			"or --dashboard-token is given; beyond loopback without a token, no dashboard"},
		&cli.StringFlag{Name: "dashboard-token", EnvVars: []string{"CRAWLER_DASHBOARD_TOKEN"}, Usage: "with --metrics-addr, a secret the dashboard's requests must carry (open it as /?token=SECRET); needed beyond loopback"},
		&cli.StringSliceFlag{Name: "dashboard-allow-host", Usage: "with --metrics-addr, a `NAME` the dashboard may be opened by besides " +
			"the address and localhost (repeatable); other names are refused, as a DNS-rebinding page's would be"},
		&cli.BoolFlag{Name: "pprof", Usage: "with --metrics-addr, also serve Go's /debug/pprof/"},
		&cli.DurationFlag{Name: "progress-every", Value: 30 * time.Second, Usage: "off a terminal, log the crawl's progress this often " +
			"(on a terminal a progress line is redrawn every second); 0 shows no progress"},
		&cli.IntFlag{Name: renderTabsFlag, Usage: fmt.Sprintf("also run a render worker of N headless Chromium tabs (1 to %d) beside the plain fetch loops: "+
			"it takes the hosts whose pages need a browser (seed --render, --render-match), and every request their pages make goes through "+
			"this worker's fetcher (robots.txt, scope, the host's tokens, the WARC files); needs Debian's chromium", crawl.MaxTabs)},
		&cli.StringFlag{Name: "chromium", Usage: "with --render, the browser to run (default: chromium on the PATH)"},
		&cli.IntFlag{Name: "render-pages", Value: 200, Usage: "with --render, restart the browser after this many pages (bounds its memory)"},
		&cli.StringFlag{Name: "render-max-rss", Value: "1GiB", Usage: "with --render, the most memory the browser's processes may hold together: " +
			"sampled while pages render, a browser past it is stopped at once (its page's record says so) and another started"},
		&cli.StringFlag{Name: "render-isolation", Value: "auto", Usage: "with --render, how the browser is kept off the network: " +
			"netns (a network namespace of its own with no interface: nothing can leave it; needs Linux and root or user namespaces), " +
			"flags (browser flags and a script that removes WebRTC: the fall-back), or auto (netns where the machine allows it, else flags, said in the log)"},
		&cli.DurationFlag{Name: "render-timeout", Value: 30 * time.Second, Usage: "with --render, a page that has not settled by then fails and is retried"},
	}, warcUploadFlags()...))
}

func workCommand() *cli.Command {
	return &cli.Command{
		Name:  "work",
		Usage: "crawl: run as many of these as you like, on any machines, against one Redis",
		Description: "Reads the crawl's settings from Redis (run 'crawler seed' first). SIGINT or SIGTERM stops\n" +
			"taking URLs, finishes the pages in progress and exits 0; a killed worker loses nothing:\n" +
			"its URLs return to the queue when their leases expire (about 10 s).",
		Flags: append(workFlags(), withEnv([]cli.Flag{&cli.BoolFlag{Name: "exit-when-done", Usage: "exit once nothing is left to crawl"}})...),
		Action: func(c *cli.Context) error {
			if err := checkWorkFlags(c); err != nil {
				return usage(err)
			}
			rdb, err := connect(c)
			if err != nil {
				return err
			}
			defer rdb.Close()
			return runWork(c, rdb, c.Bool("exit-when-done"))
		},
	}
}

// checkWorkFlags validates the work flags that need no Redis.
func checkWorkFlags(c *cli.Context) error {
	if p := c.String("proxy"); p != "" {
		if u, err := url.Parse(p); err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") || u.Host == "" {
			return fmt.Errorf("--proxy %q: want http://host:port (or https://, socks5://)", p)
		}
	}
	if d := c.String("dns"); d != "" {
		if _, port, err := net.SplitHostPort(d); err != nil || port == "" {
			return fmt.Errorf("--dns %q: want HOST:PORT, e.g. 127.0.0.1:53", d)
		}
	}
	if n := c.Int("max-attempts"); n < 1 || n > 100 {
		return fmt.Errorf("--max-attempts %d: want 1 to 100", n)
	}
	if d := c.Duration("progress-every"); d < 0 {
		return fmt.Errorf("--progress-every %v: want 0 (no progress) or more", d)
	}
	if d := c.Duration("redis-wait"); d < 0 {
		return fmt.Errorf("--redis-wait %v: want 0 or more", d)
	}
	if _, err := parseSize(c.String("warc-max-size")); err != nil {
		return fmt.Errorf("--warc-max-size: %v", err)
	}
	if err := checkUploadFlags(c); err != nil {
		return err
	}
	if n := c.Int("concurrency"); n < 1 || n > crawl.MaxConcurrency {
		return fmt.Errorf("--concurrency %d: want 1 to %d (for more, run more processes)", n, crawl.MaxConcurrency)
	}
	name := renderTabsFlag
	if c.Command.Name == "crawl" {
		name = "render-tabs"
	}
	if n := renderTabs(c); n < 0 || n > crawl.MaxTabs {
		return fmt.Errorf("--%s %d: want 1 to %d browser tabs (0: none)", name, n, crawl.MaxTabs)
	} else if _, err := render.Find(c.String("chromium")); n > 0 && err != nil {
		return fmt.Errorf("--%s: %v", name, err)
	}
	if _, err := render.ParseIsolation(c.String("render-isolation")); err != nil {
		return fmt.Errorf("--render-isolation: %v", err)
	}
	if _, err := parseSize(c.String("render-max-rss")); err != nil {
		return fmt.Errorf("--render-max-rss: %v", err)
	}
	if n := c.Int("render-pages"); n < 1 {
		return fmt.Errorf("--render-pages %d: want 1 or more", n)
	}
	if d := c.Duration("render-timeout"); d < time.Second {
		return fmt.Errorf("--render-timeout %v: want 1s or more", d)
	}
	return nil
}

// parseSize reads a byte size: a number, optionally followed by B, KB, MB,
// GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	unit := strings.TrimLeft(t, "0123456789")
	n, err := strconv.ParseInt(strings.TrimSpace(t[:len(t)-len(unit)]), 10, 64)
	mult := map[string]int64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}[strings.ToLower(strings.TrimSpace(unit))]
	if err != nil || mult == 0 || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: want a size such as 500MB or 1GiB", s)
	}
	return n * mult, nil
}

// redisWaitFlag lets a process started with (or before) Redis wait for it,
// as in a docker-compose start, instead of failing at once.
func redisWaitFlag(d time.Duration) cli.Flag {
	return &cli.DurationFlag{Name: "redis-wait", Value: d,
		Usage: "at start, wait this long for Redis to answer (retrying with back-off; 0 fails at once)"}
}

func workerID(c *cli.Context) string {
	if id := c.String("id"); id != "" {
		return id
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

func runWork(c *cli.Context, rdb redis.UniversalClient, exitWhenDone bool) error {
	if err := checkEviction(c, rdb); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	prog := &progress{out: c.App.ErrWriter, tty: isTerminal(c.App.ErrWriter)}
	logger, _ := newLogger(prog, c.String("log-format"), c.String("log-level")) // checked in Before
	o := crawl.Options{ID: workerID(c), Concurrency: c.Int("concurrency"), ExitWhenDone: exitWhenDone, Log: logger,
		Cookies: c.Bool("cookies"), MaxAttempts: c.Int("max-attempts"), DNS: c.String("dns")}
	if p := c.String("proxy"); p != "" {
		o.Proxy, _ = url.Parse(p) // checked by checkWorkFlags
	}
	if dir := c.String("warc-dir"); dir != "" {
		size, _ := parseSize(c.String("warc-max-size")) // checked by checkWorkFlags
		o.WARC = &archive.Config{Dir: dir, Prefix: c.String("warc-prefix"), MaxSize: size}
	}
	if out := c.String("out"); out != "" {
		out = strings.ReplaceAll(out, "{id}", archive.FileSafe(o.ID)) // one file per worker on a shared volume
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--out: %v", err)
		}
		defer f.Close()
		o.Out = &lockedWriter{w: f} // the render worker (--render) writes its records there too
	}
	var metricsL net.Listener
	if addr := c.String("metrics-addr"); addr != "" {
		var err error
		if metricsL, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("--metrics-addr: %v", err)
		}
		defer metricsL.Close()
	}
	finishUploads, err := startUploads(ctx, c, &o, logger)
	if err != nil {
		return err
	}
	// The render worker first: a browser that cannot start fails the
	// command before the plain worker joins.
	rw, err := renderWorker(ctx, c, rdb, o)
	if err != nil {
		return err
	}
	w, err := crawl.NewWorker(ctx, rdb, c.String("crawl"), o)
	if err != nil {
		return err
	}
	logger.Info("worker started", "worker", o.ID, "crawl", c.String("crawl"), "concurrency", o.Concurrency)
	if metricsL != nil {
		defer serveWorkerMetrics(ctx, c, rdb, metricsL, w, logger)()
	}
	ran := make(chan struct{})
	go sayStopping(ctx, c.Context, ran, stop, logger)
	pctx, stopProgress := context.WithCancel(ctx)
	progressDone := make(chan struct{})
	go func() { defer close(progressDone); prog.report(pctx, w, logger, c.Duration("progress-every")) }()
	err = runBoth(ctx, w, rw, logger)
	stopProgress()
	<-progressDone
	prog.clear()
	close(ran)
	if uerr := finishUploads(); err == nil {
		err = uerr // the files closed last, uploaded (or named) after the workers closed them
	}
	if err != nil {
		return err
	}
	logger.Info("worker exits", exitAttrs(o.ID, &w.Counters)...)
	return nil
}

// sayStopping says, on the first signal (ctx done while the worker runs
// and the caller's own context is not), that the worker is stopping, and
// restores the default handling for a second signal (stop), which kills.
func sayStopping(ctx, caller context.Context, ran <-chan struct{}, stop func(), logger *slog.Logger) {
	select {
	case <-ctx.Done():
		select {
		case <-ran:
			return // the worker had ended: no signal to speak of
		default:
		}
		if caller.Err() != nil {
			return // the caller ended, not a signal
		}
		logger.Info("stopping: finishing the pages in progress (a second Ctrl-C kills; leases return the rest)")
		stop()
	case <-ran:
	}
}

// exitAttrs is what a worker's last line says it did.
func exitAttrs(id string, n *crawl.Counters) []any {
	attrs := []any{"worker", id, "ok", n.OK.Load(), "http_error", n.HTTPError.Load(), "failed", n.Failed.Load(),
		"skipped", n.Skipped.Load(), "requests", n.Requests.Load(), "put_back", n.PutBack.Load(), "late", n.Late.Load(),
		"retokened", n.Retokened.Load()}
	if u := n.Unchanged.Load(); u > 0 { // refetches answered 304
		attrs = append(attrs, "unchanged", u)
	}
	return attrs
}

// serveWorkerMetrics serves /metrics on l, and the dashboard where it may
// be (beyond loopback it needs a token, as 'crawler dashboard' does); it
// returns what stops them.
func serveWorkerMetrics(ctx context.Context, c *cli.Context, rdb redis.UniversalClient, l net.Listener, w *crawl.Worker, logger *slog.Logger) func() {
	var dash *dashboard.Dashboard
	page := "none: --metrics-addr reaches beyond loopback; give --dashboard-token to serve it"
	if dashboard.CheckListen(c.String("metrics-addr"), c.String("dashboard-token")) == nil {
		dash = dashboard.New(rdb, dashboard.Config{Crawl: c.String("crawl"), Token: c.String("dashboard-token"),
			Hosts: c.StringSlice("dashboard-allow-host")})
		go dash.Run(ctx)
		page = dashboardURL(l.Addr(), c.String("dashboard-token") != "")
	}
	stop := serveMetrics(l, w, c.Bool("pprof"), dash)
	logger.Info("serving metrics", "url", "http://"+l.Addr().String()+"/metrics", "dashboard", page)
	return stop
}

func crawlCommand() *cli.Command {
	return &cli.Command{
		Name:      "crawl",
		Usage:     "seed and crawl in one process until done (embedded Redis unless --redis is given)",
		ArgsUsage: "URL...",
		Flags: append(append(append(seedFlags(), crawlWorkFlags()...), &cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read URLs from FILE ('-' for stdin)"},
			skipSeenFlag(), skipBadFlag(), sitemapFlag()), loginFlags()...),
		Action: func(c *cli.Context) error {
			if err := errors.Join(checkSeedFlags(c), checkWorkFlags(c)); err != nil {
				return usage(err)
			}
			rdb, closeRedis, err := connectOrEmbed(c)
			if err != nil {
				return err
			}
			defer closeRedis()
			if !c.IsSet("redis") && c.String("out") == "" {
				// The embedded Redis, and the records in it, go with this
				// process: keep them in a file.
				c.Set("out", c.String("crawl")+".jsonl")
			}
			// Bad seed lines were said; the good ones are crawled, and the
			// exit status says so at the end.
			var someBad errSomeSeedsBad
			if err := runSeed(c, rdb, false); err != nil && !errors.As(err, &someBad) {
				return err
			}
			if err := runWork(c, rdb, true); err != nil {
				return err
			}
			st, err := status.Read(context.WithoutCancel(c.Context), rdb, c.String("crawl"))
			if err != nil {
				return err
			}
			if out := c.String("out"); out != "" {
				fmt.Fprintf(c.App.ErrWriter, "records: %s\n", out)
			}
			if err := printStatus(c.App.ErrWriter, st, false); err != nil {
				return err
			}
			if st.Counters["pages"] == 0 {
				return fmt.Errorf("nothing was fetched: %s", firstReasons(c, rdb, 3))
			}
			if someBad.msg != "" {
				return fmt.Errorf("the crawl is done, but %s", strings.TrimPrefix(someBad.msg, "seed: "))
			}
			return nil
		},
	}
}

// firstReasons says why the first records of the crawl were not fetched
// (the first few of each shard's stream, up to n reasons).
func firstReasons(c *cli.Context, rdb redis.UniversalClient, n int) string {
	why, err := admin.FirstErrors(context.WithoutCancel(c.Context), rdb, c.String("crawl"), n)
	switch {
	case err != nil:
		return fmt.Sprintf("no page was reachable (and reading why failed: %v)", err)
	case len(why) == 0:
		return "no page was reachable (see the status above)"
	}
	return strings.Join(why, "; ")
}

// serveMetrics serves the worker's /metrics, /healthz (200 while Redis
// answers and the crawl exists, 503 otherwise), the dashboard at / (when
// dash is not nil) and, asked, /debug/pprof/,
// on a listener bound before the worker registered (a port in use must
// fail the start before the crawl lists the worker as alive).
func serveMetrics(l net.Listener, w *crawl.Worker, withPprof bool, dash *dashboard.Dashboard) func() {
	mux := http.NewServeMux()
	if dash != nil {
		mux.Handle("/", dash)
	}
	mux.Handle("/metrics", promhttp.HandlerFor(w.Metrics(), promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(rw http.ResponseWriter, r *http.Request) {
		if err := w.Healthy(r.Context()); err != nil {
			http.Error(rw, err.Error(), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(rw, "ok\n")
	})
	if withPprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	return func() { srv.Close() }
}

// lockedWriter makes one writer's lines whole when two workers write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
