package crawl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/leader"
	"github.com/redcrawl/crawler/parse"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redis/go-redis/v9"
)

// Options tune one worker process. Zero values take the defaults.
type Options struct {
	ID string // names this process in leader/worker listings (default host:pid)
	// Concurrency is how many goroutines fetch at once (default 8, at most
	// MaxConcurrency). Each holds at most one page body (fetch.Config.MaxBody);
	// nothing else in a worker grows with it beyond a few queue slots.
	Concurrency  int
	ExitWhenDone bool // return once the scheduler declares the crawl finished
	Out          io.Writer
	Logf         func(format string, args ...any)
	Leader       leader.Config // default leader.DefaultConfig()
	MaxAttempts  int           // tries per URL on transient failures (default 3)
	// MaxReserveWait: a URL whose host has no token within this wait is
	// deferred, so a goroutine never sits long on one slow host (default
	// 1 s; measured: 100 ms made deferrals churn, 59 round trips a page).
	MaxReserveWait time.Duration
	// SweepInterval is how often the leader sweeps (default 1 s); it also
	// sweeps at once when an exchange leaves nothing queued and nothing
	// held, so the end of a crawl is noticed at once.
	SweepInterval time.Duration
	KnownURLs     int           // URLs remembered locally as seen (default 200 000, about 30 MB)
	Lease         time.Duration // lease of a popped URL without heartbeat (default 10 s)
	Fetch         *fetch.Config // overrides the fetcher (tests); settings still set UA and AllowPrivate
}

// MaxConcurrency bounds Options.Concurrency: past a few hundred fetches at
// once a process gains nothing it would not gain from another process, and
// a million goroutines starve the heartbeat and the scheduler's lock renewal.
const MaxConcurrency = 512

// ErrOptions: options a worker cannot run with.
var ErrOptions = errors.New("crawl: invalid worker options")

// Validate checks the options that have no sensible fallback.
func (o Options) Validate() error {
	if o.Concurrency < 0 || o.Concurrency > MaxConcurrency {
		return fmt.Errorf("%w: concurrency %d: want 1 to %d (run more processes for more)", ErrOptions, o.Concurrency, MaxConcurrency)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Leader.TTL == 0 {
		o.Leader = leader.DefaultConfig()
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.MaxReserveWait <= 0 {
		o.MaxReserveWait = time.Second
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = time.Second
	}
	if o.KnownURLs <= 0 {
		o.KnownURLs = 200_000
	}
	if o.Lease <= 0 {
		o.Lease = 10 * time.Second
	}
	return o
}

// Worker is one `crawler work` process: Concurrency fetch loops, a
// heartbeat, and a campaign for the scheduler role.
type Worker struct {
	c        redis.UniversalClient
	k        Keys
	s        Settings
	o        Options
	fr       *frontier.Frontier
	fetcher  *fetch.Fetcher
	lim      *politeness.Limiter
	robots   *politeness.Robots
	elector  *leader.Elector
	held     sync.Map // lease id -> *frontier.Lease: the leases the heartbeat renews
	scope    atomic.Pointer[parse.Scope]
	outMu    sync.Mutex
	vanished atomic.Bool // the crawl's settings disappeared from Redis
	gone     func()      // marks the crawl gone and stops everything at once (set by Run)
	known    *known
	broker   *broker
	Counters Counters
}

// Counters are this process's own tallies.
type Counters struct {
	Fetched, Deferred, Skipped, Errors atomic.Int64
	// Exchanges counts calls to the frontier, EmptyPops those that only
	// wanted URLs and got none, Sent the pages they carried.
	Exchanges, EmptyPops, Sent atomic.Int64
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
	k := KeysFor(name)
	s, err := LoadSettings(ctx, c, k)
	if err != nil {
		return nil, err
	}
	seen, err := dedup.Attach(ctx, c, k.Seen)
	if err != nil {
		return nil, fmt.Errorf("crawl %q: %w", name, err)
	}
	fcfg := fetch.DefaultConfig()
	if o.Fetch != nil {
		fcfg = *o.Fetch
	}
	fcfg.UserAgent, fcfg.AllowPrivate = s.UserAgent, s.AllowPrivate
	w := &Worker{c: c, k: k, s: s, o: o, fetcher: fetch.New(fcfg), known: newKnown(o.KnownURLs)}
	w.fr = frontier.New(c, k.Frontier, seen)
	w.fr.Lease = o.Lease
	w.fr.PageBudget = s.MaxPages
	rate := politeness.Limit(s.Rate)
	if math.IsInf(s.Rate, 1) {
		rate = politeness.Inf
	} else {
		w.fr.HostSpacing = time.Duration(float64(time.Second) / s.Rate)
	}
	w.lim = politeness.NewLimiter(c, rate, s.Burst)
	w.robots = politeness.NewRobots(c, k.RobotsPrefix(), s.AgentToken(), w.fetchRobots)
	if w.elector, err = leader.NewElector(c, k.Leader, o.ID, o.Leader); err != nil {
		return nil, err
	}
	if err := w.refreshScope(ctx); err != nil {
		return nil, err
	}
	// Registered before it can write anything else: a reset that starts
	// now waits for this worker too.
	if _, err := w.fr.Heartbeat(ctx, o.ID, nil); err != nil {
		if errors.Is(err, frontier.ErrGone) {
			return nil, fmt.Errorf("%w %q (run 'crawler seed' first, or check --crawl)", ErrNoCrawl, name)
		}
		return nil, err
	}
	return w, nil
}

// Settings are the crawl's settings as this worker read them.
func (w *Worker) Settings() Settings { return w.s }

func (w *Worker) refreshScope(ctx context.Context) error {
	hosts, err := w.c.SMembers(ctx, w.k.Hosts).Result()
	if err != nil {
		return fmt.Errorf("crawl: read scope: %w", err)
	}
	w.setScope(hosts)
	return nil
}

// setScope takes the crawl's seed hosts as read from Redis.
func (w *Worker) setScope(hosts []string) { w.scope.Store(parse.NewScope(w.s.Scope, hosts)) }

func (w *Worker) fetchRobots(ctx context.Context, u string) (politeness.RobotsResponse, error) {
	r, err := w.fetcher.FetchBody(ctx, u)
	if errors.Is(err, fetch.ErrBlockedAddress) {
		// Not a robots.txt answer: every fetch from this host will be
		// refused by the same guard, and its record will say why (a
		// "disallowed by robots.txt" would send the user looking in the
		// wrong place).
		return politeness.RobotsResponse{Status: http.StatusNotFound}, nil
	}
	if err != nil {
		return politeness.RobotsResponse{}, err
	}
	return politeness.RobotsResponse{Status: r.Status, Body: r.Body, Location: r.Location}, nil
}

// Run works until ctx ends (graceful: fetches in progress finish and are
// recorded, URLs leased but not started go back to the queue, the leader
// resigns) or, with ExitWhenDone, until the crawl is finished. It returns
// nil in both cases.
func (w *Worker) Run(ctx context.Context) error {
	stop, stopAll := context.WithCancel(ctx)
	defer stopAll()
	// A fetch in progress finishes even after a stop, unless the crawl is
	// gone: then nothing is left to record it in.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	w.gone = func() {
		w.vanished.Store(true)
		stopAll()
		cancelWork()
	}

	w.broker = newBroker(w, stopAll)
	brokerDone := make(chan struct{})
	go func() { defer close(brokerDone); w.broker.run(stop, work) }()
	var procs sync.WaitGroup
	for i := 0; i < w.o.Concurrency; i++ {
		procs.Add(1)
		go func() {
			defer procs.Done()
			w.loop(stop, work)
		}()
	}
	bg, stopBG := context.WithCancel(work)
	var side sync.WaitGroup
	side.Add(2)
	go func() { defer side.Done(); w.heartbeat(bg) }()
	// The scheduler resigns under work, not bg: bg ends as soon as the
	// fetch loops do, which can be before the resignation is sent.
	go func() { defer side.Done(); w.schedule(stop, work) }()
	procs.Wait()
	w.broker.close() // the loops are gone: the broker sends what is left, then returns
	<-brokerDone
	stopBG()
	side.Wait()
	// Every goroutine has stopped: this worker writes nothing more, which
	// is what a reset waits for before it deletes the crawl's keys.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	if err := w.fr.Deregister(dctx, w.o.ID); err != nil {
		w.o.Logf("%v (the registry forgets this worker within %v)", err, w.o.Lease)
	}
	cancel()
	if w.vanished.Load() {
		return fmt.Errorf("%w (%q: reset, or Redis restarted without its data); stopped", ErrGone, w.k.Name)
	}
	return nil
}

// loop is one fetch goroutine: it takes leased URLs from the broker and
// hands their outcomes back to it.
func (w *Worker) loop(stop, work context.Context) {
	for {
		p, ok := w.broker.take(stop)
		if !ok {
			return
		}
		w.process(work, p.lease, p.info)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (w *Worker) heartbeat(ctx context.Context) {
	t := time.NewTicker(w.o.Lease / 3)
	defer t.Stop()
	for {
		if hosts, err := w.c.SMembers(ctx, w.k.Hosts).Result(); err == nil {
			w.setScope(hosts)
		} else if ctx.Err() == nil {
			w.o.Logf("heartbeat: %v", err)
		}
		var leases []*frontier.Lease
		w.held.Range(func(_, l any) bool { leases = append(leases, l.(*frontier.Lease)); return true })
		_, err := w.fr.Heartbeat(ctx, w.o.ID, leases)
		if errors.Is(err, frontier.ErrGone) {
			// Reset, or Redis lost its data: working on would only idle.
			w.gone()
			return
		}
		if err != nil && ctx.Err() == nil {
			w.o.Logf("heartbeat: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// schedule campaigns for the scheduler role and, while leading, sweeps the
// frontier under the leadership's context and epoch.
func (w *Worker) schedule(stop, work context.Context) {
	for stop.Err() == nil {
		l, err := w.elector.Campaign(stop)
		if err != nil {
			if stop.Err() == nil {
				w.o.Logf("campaign: %v", err)
				sleep(stop, w.o.Leader.RetryInterval)
			}
			continue
		}
		w.o.Logf("leading as scheduler, epoch %d", l.Epoch())
		w.lead(stop, l)
		rctx, cancel := context.WithTimeout(work, w.o.Leader.RetryInterval)
		if err := l.Resign(rctx); err != nil {
			w.o.Logf("resign: %v (the lock expires in at most %v)", err, w.o.Leader.TTL)
		}
		cancel()
	}
}

func (w *Worker) lead(stop context.Context, l *leader.Leadership) {
	// Besides every SweepInterval, sweep when the next deferred item is
	// due, and when an exchange reports nothing queued or held ("drained":
	// the crawl may be over).
	sub := w.c.Subscribe(l.Context(), w.fr.Keys().Wake())
	defer sub.Close()
	msgs := sub.Channel()
	timer := time.NewTimer(w.o.SweepInterval)
	defer timer.Stop()
	for {
		sw, err := w.fr.Schedule(l.Context(), l.Key(), l.Epoch(), w.o.MaxAttempts, 1000, w.s.MaxPages)
		switch {
		case errors.Is(err, leader.ErrFenced):
			w.o.Logf("scheduler epoch %d fenced off: %v", l.Epoch(), err)
			return
		case errors.Is(err, frontier.ErrGone):
			w.gone()
			return
		case err != nil && l.Context().Err() == nil:
			w.o.Logf("sweep: %v", err)
		case sw.Reclaimed+sw.Failed > 0:
			w.o.Logf("sweep: %d expired leases back on the queue, %d failed for good", sw.Reclaimed, sw.Failed)
		}
		next := w.o.SweepInterval
		if err == nil && sw.NextDeferred >= 0 {
			// Retries come due one by one; a quarter second's grace lets
			// one sweep release several.
			next = min(next, max(sw.NextDeferred, 250*time.Millisecond))
		}
		timer.Reset(next)
	wait:
		for {
			select {
			case <-stop.Done():
				return
			case <-l.Done():
				w.o.Logf("scheduler epoch %d ended: %v", l.Epoch(), l.Err())
				return
			case <-timer.C:
				break wait
			case m := <-msgs:
				if m.Payload == "drained" {
					break wait
				}
			}
		}
	}
}

// process takes one leased URL to its end: fetched and finished, deferred,
// or skipped. Every path ends the lease or hands the item back; an error
// that prevents even that leaves the lease to expire, and the sweep returns
// the URL to the queue.
func (w *Worker) process(ctx context.Context, l *frontier.Lease, info frontier.PopInfo) {
	item := l.Item
	rec := Record{URL: item.URL, Depth: item.Depth, Worker: w.o.ID, FetchedAt: time.Now().UTC()}
	u, err := url.Parse(item.URL)
	if err != nil || u.Host == "" {
		rec.Error = fmt.Sprintf("not a URL: %v", err)
		w.finish(ctx, l, rec, frontier.Outcome{Stat: "error", Failed: rec.Error})
		return
	}
	if w.s.MaxPages > 0 && info.Pages >= w.s.MaxPages {
		w.finish(ctx, l, Record{}, frontier.Outcome{Stat: "skipped"})
		return
	}
	verdict, err := w.robots.Check(ctx, u)
	var unavail *politeness.UnavailableError
	switch {
	case errors.As(err, &unavail) && unavail.Since >= w.s.RobotsGiveUp:
		rec.Error = fmt.Sprintf("robots.txt unreachable: %v (gave up after %v)", unavail, w.s.RobotsGiveUp)
		w.Counters.Errors.Add(1)
		w.finish(ctx, l, rec, frontier.Outcome{Stat: "failed", Failed: rec.Error})
		return
	case errors.As(err, &unavail):
		// RFC 9309: nothing of this host now. Its URLs wait in its queue,
		// not offered to any worker until the shared back-off ends; no
		// attempt is counted.
		w.requeue(ctx, l, unavail.Retry)
		return
	case err != nil:
		if !errors.Is(err, politeness.ErrRobotsPending) {
			w.o.Logf("robots.txt for %s: %v", u.Host, err)
		}
		w.deferItem(ctx, l, item, 2*time.Second)
		return
	}
	if !verdict.Allowed {
		rec.Error = "disallowed by robots.txt"
		w.Counters.Skipped.Add(1)
		w.finish(ctx, l, rec, frontier.Outcome{Stat: "skipped"})
		return
	}
	lim := w.lim
	if d := verdict.CrawlDelay; d > 0 && float64(politeness.Every(d)) < float64(lim.Limit()) {
		lim = lim.WithLimit(politeness.Every(d), 1)
	}
	res, err := lim.ReserveN(ctx, w.k.RatePrefix()+"{"+u.Host+"}", 1, w.o.MaxReserveWait)
	if err != nil {
		w.o.Logf("rate limit for %s: %v", u.Host, err)
		w.deferItem(ctx, l, item, time.Second)
		return
	}
	if !res.OK {
		// The host is busy: not offered again until its bucket has a token.
		w.requeue(ctx, l, res.Delay)
		return
	}
	sleep(ctx, res.Delay)

	start := time.Now()
	r, err := w.fetcher.Fetch(ctx, item.URL)
	rec.FetchMS = time.Since(start).Milliseconds()
	if err != nil {
		if fetch.IsTransient(err) {
			w.retry(ctx, l, item, rec, err.Error(), 0)
			return
		}
		rec.Error = err.Error()
		w.Counters.Errors.Add(1)
		w.finish(ctx, l, rec, frontier.Outcome{Stat: "error", Failed: rec.Error})
		return
	}
	w.Counters.Fetched.Add(1)
	rec.Status, rec.ContentType, rec.Bytes, rec.Truncated = r.Status, r.ContentType, r.Bytes, r.Truncated
	if fetch.TransientStatus(r.Status) {
		w.retry(ctx, l, item, rec, fmt.Sprintf("HTTP %d", r.Status), r.RetryAfter)
		return
	}
	var children []frontier.Item
	scope := w.scope.Load()
	if r.Location != "" {
		// A redirect's target is a discovered URL like any link (same depth:
		// a redirect is not a step further from the seed).
		if t, err := parse.Canonicalize(nil, r.Location); err == nil {
			rec.Redirect = t.String()
			if scope.Allows(t) {
				children = append(children, frontier.Item{URL: rec.Redirect, Depth: item.Depth})
			}
		}
	}
	if r.HTML && r.Status >= 200 && r.Status < 300 {
		page, err := parse.Extract(u, bytes.NewReader(r.Body), parse.Limits{})
		if err != nil {
			rec.Error = fmt.Sprintf("parse: %v", err)
		} else {
			rec.Title, rec.Links = page.Title, len(page.Links)
			if w.s.MaxDepth < 0 || item.Depth < w.s.MaxDepth {
				for _, link := range page.Links {
					if lu, err := url.Parse(link); err == nil && scope.Allows(lu) {
						children = append(children, frontier.Item{URL: link, Depth: item.Depth + 1})
					}
				}
			}
		}
	}
	stat := "done"
	if r.Status >= 400 {
		stat = "error"
	}
	w.finish(ctx, l, rec, frontier.Outcome{Children: children, Stat: stat, Fetched: true})
}

// retry defers a transient failure with exponential back-off (or the
// server's Retry-After), and gives up after MaxAttempts.
func (w *Worker) retry(ctx context.Context, l *frontier.Lease, item frontier.Item, rec Record, reason string, after time.Duration) {
	item.Attempts++
	if item.Attempts >= w.o.MaxAttempts {
		rec.Error = fmt.Sprintf("%s (gave up after %d attempts)", reason, item.Attempts)
		w.Counters.Errors.Add(1)
		w.finish(ctx, l, rec, frontier.Outcome{Stat: "failed", Failed: rec.Error, Fetched: rec.Status != 0})
		return
	}
	w.deferItem(ctx, l, item, max(after, time.Duration(1<<item.Attempts)*500*time.Millisecond))
}

// requeue puts a leased URL back at the front of its host's queue and
// keeps the host from being offered to any worker for wait.
func (w *Worker) requeue(ctx context.Context, l *frontier.Lease, wait time.Duration) {
	defer w.held.Delete(l.ID)
	w.Counters.Deferred.Add(1)
	if err := w.fr.Requeue(ctx, l, wait); err != nil && !errors.Is(err, frontier.ErrLeaseLost) {
		w.o.Logf("requeue %s: %v (its lease will return it)", l.Item.URL, err)
	}
}

func (w *Worker) deferItem(ctx context.Context, l *frontier.Lease, item frontier.Item, d time.Duration) {
	defer w.held.Delete(l.ID) // handed back, or left to expire: no longer renewed
	w.Counters.Deferred.Add(1)
	if err := w.fr.Defer(ctx, l, item, d); err != nil && !errors.Is(err, frontier.ErrLeaseLost) {
		w.o.Logf("defer %s: %v (its lease will return it)", item.URL, err)
	}
}

// finish hands a page's outcome to the broker, which sends it with others
// in one exchange; the lease stays held (heartbeats renew it) until then.
func (w *Worker) finish(ctx context.Context, l *frontier.Lease, rec Record, o frontier.Outcome) {
	if rec.URL != "" {
		b, err := json.Marshal(rec)
		if err != nil {
			w.o.Logf("record %s: %v", rec.URL, err)
		}
		o.Record = b
	}
	w.broker.finish(frontier.Done{Lease: l, Outcome: o}, rec)
}

// finished is called by the broker once a page's exchange succeeded, with
// the page's links as sent (those not known to be seen) and which of those
// were queued.
func (w *Worker) finished(sent []frontier.Item, rec Record, queued []bool) {
	for _, ch := range sent {
		w.known.add(ch.URL)
	}
	if w.o.Out == nil || rec.URL == "" {
		return
	}
	for _, q := range queued {
		if q {
			rec.NewLinks++
		}
	}
	b, _ := json.Marshal(rec)
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.o.Out.Write(append(b, '\n'))
}
