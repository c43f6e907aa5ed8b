package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/control"
	"github.com/redcrawl/crawler/internal/bounded"
	"github.com/redcrawl/crawler/leader"
	"github.com/redcrawl/crawler/parse"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redcrawl/crawler/redisconn"
	"github.com/redcrawl/crawler/render"
	"github.com/redis/go-redis/v9"
)

// Worker is one `crawler work` process: Concurrency fetch loops running the
// fetch loops, one exchanger batching their work into frontier calls, a
// heartbeat, and a campaign for the scheduler role (doc.go draws them).
type Worker struct {
	c         redis.UniversalClient
	name      string               // the crawl's
	cur       atomic.Pointer[live] // the settings acted on now (reload)
	reloadMu  sync.Mutex
	opts      Options
	fr        *frontier.Frontier
	fetcher   *fetch.Fetcher
	pauses    *pauses
	robots    *politeness.Robots
	elector   *leader.Elector
	held      sync.Map // lease id -> *frontier.Lease: the leases the heartbeat renews
	scope     atomic.Pointer[parse.Scope]
	seedHosts atomic.Int64 // the seed hosts the scope was made of (rereadScope)
	known     *known
	skips     skips
	end       *ending      // how the current Run ends (set by Run)
	pages     atomic.Int64 // the crawl's pages fetched, as the last exchange said (with a budget)
	metrics   *metrics
	warc      *archive.Writer  // with Options.WARC: opened by NewWorker, closed by Run
	render    *render.Pool     // with Options.Render: the browser, closed by Run
	login     *login           // the crawl's login (seed --login-url): nil without one
	subs      *subCache        // with Options.Render: its pages' subresources
	log       *slog.Logger     // Options.Log with the worker's id
	now       func() time.Time // Options.Clock, or time.Now: what every decision on a lease's time reads
	// evictions watches Redis's evicted_keys (a heartbeat reads it every
	// EvictionCheck); evicted counts what it saw.
	evictions evictionWatch
	evicted   atomic.Int64
	Counters  Counters
}

// NewWorker reads the crawl's settings from Redis (never from flags: every
// worker must agree) and builds a worker.
func NewWorker(ctx context.Context, c redis.UniversalClient, name string, o Options) (*Worker, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := CheckName(name); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	if o.Render != nil && !strings.HasSuffix(o.ID, RenderWorkerSuffix) {
		o.ID += RenderWorkerSuffix // status counts the render workers by it
	}
	s, err := settings.Load(ctx, c, name)
	if err != nil {
		return nil, err
	}
	fcfg, err := fetchConfig(s, o)
	if err != nil {
		return nil, err
	}
	l, err := newLive(s)
	if err != nil {
		return nil, err
	}
	w := &Worker{c: c, name: name, opts: o, fetcher: fetch.New(fcfg), known: newKnown(o.KnownURLs),
		log: o.Log.With("worker", o.ID), now: o.Clock}
	w.cur.Store(l)
	if w.now == nil {
		w.now = time.Now
	}
	fo := FrontierOptions(s)
	fo.Lease, fo.Clock = o.Lease, o.Clock
	if o.Render != nil {
		// No browser, no worker: found now, in one line.
		if w.render, err = render.New(render.Options{Exec: o.Render.Exec, Tabs: o.Render.Tabs, PagesPerBrowser: o.Render.PagesPerBrowser,
			MaxRSS: o.Render.MaxRSS, PageTimeout: o.Render.PageTimeout, Isolation: o.Render.Isolation, Log: w.log}); err != nil {
			return nil, fmt.Errorf("%w: --render: %v", ErrOptions, err)
		}
		if err := w.render.Warm(); err != nil {
			w.render.Close()
			return nil, fmt.Errorf("%w: --render: %v", ErrOptions, err)
		}
		w.subs = newSubCache(o.Render.CacheBytes)
		fo.Lane = frontier.LaneRender
	}
	if w.fr, err = frontier.Open(ctx, c, name, fo); err != nil {
		return nil, err
	}
	w.pauses = newPauses(c, w.fr.PauseChannel(), w.now)
	w.robots = politeness.NewRobots(c, "", s.AgentToken(), w.fetchRobots)
	w.robots.KeyFor = w.fr.RobotsKey
	w.metrics = newMetrics(w)
	w.robots.OnFetched = w.robotsFetched
	if w.elector, err = leader.NewElector(c, w.fr.LeaderKey(), o.ID, o.Leader); err != nil {
		return nil, err
	}
	if err := w.refreshScope(ctx); err != nil {
		return nil, err
	}
	if w.evictions.last, err = redisconn.EvictedKeys(ctx, c); err != nil {
		return nil, fmt.Errorf("crawl: reading Redis's evicted_keys: %w", err)
	}
	w.evictions.at = w.now()
	if err := w.join(ctx, fcfg); err != nil {
		return nil, err
	}
	return w, nil
}

// join readies the worker's last parts and registers it: the crawl's
// login, its WARC directory (made, or found wanting, before the worker
// joins: a start that fails leaves no live worker behind).
func (w *Worker) join(ctx context.Context, fcfg fetch.Config) error {
	var err error
	if w.login, err = w.openLogin(ctx, &fcfg); err != nil {
		return err
	}
	if w.login != nil { // a crawl behind a login: the worker's requests go with its session
		w.fetcher = fetch.New(fcfg)
	}
	if err := w.openWARC(); err != nil {
		w.closeLogin()
		return err
	}
	// Registered before it can write anything else: a reset that starts
	// now waits for this worker too.
	if err := w.register(ctx); err != nil {
		w.closeLogin()
		if errors.Is(err, frontier.ErrGone) {
			return fmt.Errorf("%w %q (run 'crawler seed' first, or check --crawl)", ErrNoCrawl, w.name)
		}
		return err
	}
	if w.opts.WARC != nil {
		w.closeOrphans(ctx, *w.opts.WARC)
	}
	return nil
}

// fetchConfig is the fetcher's configuration for the crawl's settings s
// and the worker's options o: its user agent, headers and guard, and a
// proxy (--proxy, or the usual variables).
func fetchConfig(s settings.Settings, o Options) (fetch.Config, error) {
	fcfg := fetch.DefaultConfig()
	if o.Fetch != nil {
		fcfg = *o.Fetch
	}
	fcfg.UserAgent, fcfg.AllowPrivate = s.UserAgent, s.AllowPrivate
	fcfg.Capture = o.WARC != nil
	fcfg.Keep = s.Keeps
	fcfg.Cookies, fcfg.DNS = o.Cookies, o.DNS
	var err error
	if fcfg.Headers, err = s.HTTPHeaders(); err != nil {
		return fcfg, err
	}
	switch {
	case o.Proxy != nil:
		fcfg.Proxy = http.ProxyURL(o.Proxy)
	case os.Getenv("HTTP_PROXY")+os.Getenv("HTTPS_PROXY")+os.Getenv("http_proxy")+os.Getenv("https_proxy") != "":
		fcfg.Proxy = http.ProxyFromEnvironment
	}
	if fcfg.Proxy != nil && fcfg.Capture {
		// Through a proxy the wire carries the proxy's protocol (absolute
		// URIs, CONNECT tunnels), not the exchange a WARC keeps.
		return fcfg, fmt.Errorf("%w: WARC archiving through a proxy is not supported; drop --warc-dir or the proxy", ErrOptions)
	}
	return fcfg, nil
}

// openWARC opens the worker's WARC writer, with --warc-dir.
func (w *Worker) openWARC() error {
	if w.opts.WARC == nil {
		return nil
	}
	cfg := *w.opts.WARC
	cfg.Worker, cfg.Crawl, cfg.Agent, cfg.Software = w.opts.ID, w.name, w.settings().UserAgent, Software
	if cfg.Log == nil {
		cfg.Log = w.log
	}
	var err error
	w.warc, err = archive.Open(cfg)
	return err
}

// Settings are the crawl's settings as this worker read them.
func (w *Worker) Settings() settings.Settings { return w.settings() }

func (w *Worker) refreshScope(ctx context.Context) error {
	hosts, err := w.fr.Scope.Hosts(ctx)
	if err != nil {
		return fmt.Errorf("crawl: read scope: %w", err)
	}
	w.setScope(hosts)
	return nil
}

// rereadScope reads the seed hosts again only if their number changed
// since the last read (a seed added some): a heartbeat costs one O(1)
// call for the scope, whatever the crawl's size.
func (w *Worker) rereadScope(ctx context.Context) error {
	n, err := w.fr.Scope.Count(ctx)
	if err != nil || n == w.seedHosts.Load() {
		return err
	}
	return w.refreshScope(ctx)
}

// setScope takes the crawl's seed hosts as read from Redis.
func (w *Worker) setScope(hosts []string) {
	w.scope.Store(parse.NewScope(w.settings().Scope, hosts))
	w.seedHosts.Store(int64(len(hosts)))
}

// Run works until ctx ends (graceful: fetches in progress finish and are
// recorded, URLs leased but not started go back to the queue, the leader
// resigns) or, with ExitWhenDone, until the crawl is finished; it returns
// nil then. If the crawl disappears from Redis (a reset), everything stops
// at once and Run returns an error wrapping ErrGone; a failure that stops
// the worker (a disk that cannot be written) is returned too. Whatever
// ends it tells the run's ending (run.go), which Run alone reads.
//
// The order of stopping, one stage after the other (crew):
//  1. the fetch loops return, once the stop ends (each finishes its page);
//  2. the exchanger, told the loops are gone, sends what they handed in
//     and gives back the URLs not started, then returns;
//  3. the heartbeat and the scheduler role end (the scheduler resigns);
//  4. the WARC file is closed, and last the worker deregisters — from then
//     on it writes nothing, to Redis or to its files, which is what a
//     forced reset and 'export --follow --wait-workers' wait for.
func (w *Worker) Run(ctx context.Context) error {
	end := newEnding(ctx)
	defer end.release()
	w.end = end
	ex := w.newExchanger(end)
	pages := w.newFetchLoops(ex, end)
	sched := w.newScheduler(end)
	sched.out = ex.out
	side, stopSide := context.WithCancel(end.work)
	defer stopSide()

	var c crew
	loops := c.stage(nil)
	exchanging := c.stage(ex.close)
	sides := c.stage(stopSide)
	exchanging.goRun(func() { ex.run(end.stop, end.work) })
	for i := 0; i < w.opts.Concurrency; i++ {
		loops.goRun(func() { pages.loop(end.stop, end.work, i) })
	}
	sides.goRun(func() { w.heartbeat(side) })
	if pages.claims != nil {
		sides.goRun(func() { pages.claims.run(side) })
	}
	// The scheduler resigns under work, not side: side ends as soon as the
	// fetch loops do, which can be before the resignation is sent.
	sides.goRun(func() { sched.run(end.stop, end.work) })
	if w.render != nil {
		sides.goRun(func() { pages.sampleLoop(end.stop) })
	}
	c.wait()
	if w.render != nil {
		w.render.Close() // every tab is done
	}
	w.closeLogin()

	if w.warc != nil {
		if err := w.warc.Close(); err != nil { // every loop has returned: the last file is complete
			end.fail(fmt.Errorf("archive: closing the WARC file: %w", err))
		}
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if !end.gone() {
		w.flushSkips(dctx) // the last ones; a gone crawl has no counters left to add to
	}
	if err := w.fr.Registry.Deregister(dctx, w.opts.ID); err != nil {
		w.log.Warn("deregister failed; the registry forgets this worker by itself", "within", w.opts.Lease, "err", err)
	}
	if !end.gone() {
		return end.err()
	}
	if now, err := control.Instance(dctx, w.c, w.name); err == nil && now != "" && now != w.settings().Instance {
		return fmt.Errorf("%w (%q in Redis is another crawl now, seeded since this worker started: a reset and a new seed, "+
			"or another Redis; nothing of this worker's went into it); stopped", ErrGone, w.name)
	}
	w.noticeEvictions(dctx, true) // was it evicted rather than reset?
	if n := w.evicted.Load(); n > 0 {
		return fmt.Errorf("%w (%q: Redis evicted %d keys while this worker ran, the crawl's among them: "+
			"set maxmemory-policy noeviction); stopped", ErrGone, w.name, n)
	}
	return GoneError(w.name)
}

// GoneError is the line a worker, or a follower of its records, ends
// with when the crawl is gone from Redis.
func GoneError(name string) error {
	return fmt.Errorf("%w (%q: reset, or Redis restarted without its data); stopped", ErrGone, name)
}

// Software names the crawler in what it writes (WARC files).
const Software = "RedCrawl/0.1"

func (w *Worker) newExchanger(end *ending) *exchanger {
	s := w.settings()
	ex := newExchanger(exConfig{loops: w.opts.Concurrency, rate: s.Rate, burst: s.Burst,
		exitWhenDone: w.opts.ExitWhenDone, budget: s.MaxPages > 0, version: s.Version}, w.now)
	ex.reload = w.reload
	ex.c, ex.fr, ex.known, ex.held, ex.counters, ex.log = w.c, w.fr, w.known, &w.held, &w.Counters, w.log
	ex.end, ex.warc = end, w.warc
	ex.addrs = &addresses{dns: fetch.NewAddresser(w.opts.DNS), fr: w.fr}
	ex.pages, ex.metrics, ex.pauses, ex.id, ex.robots = &w.pages, w.metrics, w.pauses, w.opts.ID, w.robots
	if w.opts.Out != nil {
		ex.out = &recordWriter{w: w.opts.Out, log: w.log, fail: end.fail}
	}
	return ex
}

func (w *Worker) newFetchLoops(ex *exchanger, end *ending) *fetchLoops {
	warc, fail := w.warc, end.fail
	return &fetchLoops{cur: &w.cur, worker: w.opts.ID, maxAttempts: w.opts.MaxAttempts,
		fetcher: w.fetcher, robots: w.robots, pauses: w.pauses, lf: newLoopFrontier(w.fr),
		held: &w.held, scope: &w.scope, counters: &w.Counters, log: w.log, ex: ex, warc: warc, fail: fail,
		skips: &w.skips, failing: &failing{}, pages: &w.pages, metrics: w.metrics,
		claims: w.claims(), now: w.now, render: w.render, subs: w.subs, sampled: &bounded.Set{}, laned: &bounded.Set{}, refusedHosts: &bounded.Set{}, prefixes: &verdicts{}, renderOpts: w.renderOpts(),
		memo: parse.NewMemo(parse.MemoSize), rescope: w.rereadScope, login: w.login}
}

// renderOpts are the render worker's options (zero for a plain worker).
func (w *Worker) renderOpts() RenderOptions {
	if w.opts.Render == nil {
		return RenderOptions{}
	}
	return *w.opts.Render
}

// claims batches the payload digest claims, with WARC on and
// --dedup-payloads.
func (w *Worker) claims() *claims {
	if w.warc == nil || !w.settings().DedupPayloads {
		return nil
	}
	return newClaims(w.fr, w.settings().DedupFrom)
}

func (w *Worker) newScheduler(end *ending) *scheduler {
	return &scheduler{id: w.opts.ID, c: w.c, fr: w.fr, elector: w.elector, cfg: w.opts.Leader, every: w.opts.SweepInterval,
		maxAttempts: w.opts.MaxAttempts, settings: w.settings, reload: w.reload, log: w.log, markGone: end.markGone, fail: end.fail, metrics: w.metrics}
}
