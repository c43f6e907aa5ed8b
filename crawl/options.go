package crawl

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/leader"
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
	// Log receives the worker's events: info for leadership and sweeps,
	// warn for each failed page and each Redis call that failed and will be
	// retried, error when something is given up. Every line carries the
	// worker's id. Nil discards.
	Log         *slog.Logger
	Leader      leader.Config // default leader.DefaultConfig()
	MaxAttempts int           // tries per URL on transient failures (default 3)
	// SweepInterval is how often the leader sweeps (default 1 s); it also
	// sweeps at once when an exchange leaves nothing queued and nothing
	// held, so the end of a crawl is noticed at once.
	SweepInterval time.Duration
	// EvictionCheck is how often the heartbeat reads Redis's evicted_keys
	// (default 10 s).
	EvictionCheck time.Duration
	KnownURLs     int           // URLs remembered locally as seen (default 200 000, about 30 MB)
	Lease         time.Duration // lease of a popped URL without heartbeat (default 10 s)
	Fetch         *fetch.Config // overrides the fetcher (tests); settings still set UA and AllowPrivate
	// WARC, when set, archives every fetch in WARC files (package archive):
	// Run opens the writer and closes its file when it returns. Worker,
	// Crawl, Agent and Software are filled in by the worker.
	WARC *archive.Config
	// Proxy is the HTTP proxy for every request; nil honours HTTP_PROXY,
	// HTTPS_PROXY and NO_PROXY. The SSRF guard judges the final target.
	Proxy *url.URL
	// DNS is the DNS server ("host:port") this worker asks instead of the
	// system's; "" for the system's. Answers are cached either way
	// (fetch.Config.DNS).
	DNS string
	// Cookies keeps the cookies hosts set, per host, for this worker's life.
	Cookies bool
	// Clock is the process's clock that leases and token windows are read
	// on (frontier.Options.Clock); nil is time.Now. Tests move it to make a
	// lease lapse in the middle of a fetch.
	Clock func() time.Time
	// Render, when set, makes this a render worker: it pops the render
	// lane only, its fetch loops are Render.Tabs browser tabs (Concurrency
	// is Render.Tabs), and it renders the samples of a crawl with
	// --render auto (render.go).
	Render *RenderOptions
}

// MaxConcurrency bounds Options.Concurrency: past a few hundred fetches at
// once a process gains nothing it would not gain from another process, and
// a million goroutines starve the heartbeat and the scheduler's lock renewal.
const MaxConcurrency = 512

// MaxTabs bounds RenderOptions.Tabs: a tab holds tens of megabytes.
const MaxTabs = 64

// Validate checks the options that have no sensible fallback.
func (o Options) Validate() error {
	if o.Concurrency < 0 || o.Concurrency > MaxConcurrency {
		return fmt.Errorf("%w: concurrency %d: want 1 to %d (run more processes for more)", ErrOptions, o.Concurrency, MaxConcurrency)
	}
	if o.Render != nil && (o.Render.Tabs < 1 || o.Render.Tabs > MaxTabs) {
		return fmt.Errorf("%w: --render %d: want 1 to %d browser tabs (each holds a page's memory; run more workers for more)", ErrOptions, o.Render.Tabs, MaxTabs)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Leader.TTL == 0 {
		o.Leader = leader.DefaultConfig()
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = time.Second
	}
	if o.EvictionCheck <= 0 {
		o.EvictionCheck = 10 * time.Second
	}
	if o.KnownURLs <= 0 {
		o.KnownURLs = 200_000
	}
	if o.Lease <= 0 {
		o.Lease = 10 * time.Second
	}
	if o.Render != nil {
		r := *o.Render
		r.Tabs = max(r.Tabs, 1)
		if r.PageTimeout <= 0 {
			r.PageTimeout = 30 * time.Second
		}
		if r.CacheBytes <= 0 {
			r.CacheBytes = 64 << 20
		}
		o.Render, o.Concurrency = &r, r.Tabs
	}
	return o
}
