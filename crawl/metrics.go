package crawl

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are a worker's Prometheus metrics, in a registry of its own
// (Worker.Metrics): what this process did, and — read from Redis when
// scraped — the crawl's frontier and paused hosts.
type metrics struct {
	reg       *prometheus.Registry
	pages     *prometheus.CounterVec // by outcome and status class
	bytes     prometheus.Counter
	fetch     prometheus.Histogram
	exchange  prometheus.Histogram
	exErrors  prometheus.Counter
	epoch     prometheus.Gauge
	leader    prometheus.Gauge
	fenced    prometheus.Counter
	evicted   prometheus.Counter
	lapsed    prometheus.Counter
	late      prometheus.Counter
	retokened prometheus.Counter
	refused   prometheus.Counter
	skipped   *prometheus.CounterVec // discovered links not followed, by reason
	changes   *prometheus.CounterVec // fetched pages by how they compare with their last fetch
}

func newMetrics(w *Worker) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redcrawl_pages_fetched_total",
			Help: "URLs this worker finished, by outcome (ok, http_error, failed, skipped, unchanged) and status class (2xx ... 5xx, none)."},
			[]string{"outcome", "status_class"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "redcrawl_response_bytes_total",
			Help: "Body bytes read by this worker."}),
		fetch: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "redcrawl_fetch_duration_seconds",
			Help: "Time from request to the end of the body.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		exchange: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "redcrawl_exchange_duration_seconds",
			Help: "Time of one frontier exchange with Redis.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		exErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "redcrawl_exchange_errors_total",
			Help: "Frontier exchanges that failed (Redis unreachable, timeouts)."}),
		epoch: prometheus.NewGauge(prometheus.GaugeOpts{Name: "redcrawl_leader_epoch",
			Help: "The epoch of this worker's term as scheduler (0 when it never led)."}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "redcrawl_is_leader",
			Help: "1 while this worker is the crawl's scheduler."}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{Name: "redcrawl_scheduler_fenced_total",
			Help: "Sweeps this worker sent as scheduler that Redis refused because a newer epoch leads: a stale leader kept out by its fence."}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{Name: "redcrawl_redis_evicted_keys_total",
			Help: "Keys Redis evicted while this worker ran (each may be a URL, a record or the lock lost): set maxmemory-policy noeviction."}),
		late: prometheus.NewCounter(prometheus.CounterOpts{Name: "redcrawl_tokens_missed_total",
			Help: "URLs given back unfetched because their host's token's window closed before a fetch loop could take them (a worker falling behind its pops)."}),
		retokened: prometheus.NewCounter(prometheus.CounterOpts{Name: "redcrawl_tokens_retaken_total",
			Help: "URLs whose host's token's window closed before a fetch loop could take them, and whose host gave a new token at once: fetched, not given back."}),
		lapsed: prometheus.NewCounter(prometheus.CounterOpts{Name: "redcrawl_leases_lapsed_total",
			Help: "URLs whose lease lapsed before this worker fetched or archived them (it was paused or cut off from Redis): handed back."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "redcrawl_pages_refused_total",
			Help: "Finished pages whose lease Redis no longer held at their exchange: not recorded (another worker has the URL)."}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redcrawl_links_skipped_total",
			Help: "Discovered links not followed, by reason (filters and trap defences)."}, []string{"reason"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "redcrawl_page_changes_total",
			Help: "Pages this worker fetched, by how each compares with its last fetch: new (the first), changed, unchanged (304, or the same payload), gone (404 or 410 on a revisit)."},
			[]string{"change"}),
	}
	m.reg.MustRegister(m.pages, m.bytes, m.fetch, m.exchange, m.exErrors, m.epoch, m.leader, m.fenced, m.evicted, m.lapsed, m.late, m.retokened, m.refused, m.skipped, m.changes,
		collectors.NewGoCollector(), &crawlCollector{w: w})
	for source, n := range map[string]*atomic.Int64{"local": &w.robots.Lookups.Local, "redis": &w.robots.Lookups.Shared,
		"fetched": &w.robots.Lookups.Fetched} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "redcrawl_robots_lookups_total",
			Help:        "robots.txt answers found in this process's cache (local), in Redis (redis), or fetched by this process.",
			ConstLabels: prometheus.Labels{"source": source}}, func() float64 { return float64(n.Load()) }))
	}
	return m
}

// statusClass is "2xx" ... "5xx", or "none" when nothing was answered.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "none"
	}
	return strconv.Itoa(status/100) + "xx"
}

// crawlCollector reads the crawl's state from Redis when scraped: the
// frontier's sizes and the hosts paused now.
type crawlCollector struct{ w *Worker }

var (
	frontierDesc = prometheus.NewDesc("redcrawl_frontier_urls", "URLs in the crawl's frontier, by state.", []string{"state"}, nil)
	pausedDesc   = prometheus.NewDesc("redcrawl_paused_hosts", "Hosts paused now (they answered 429/503, or stopped answering).", nil, nil)
	upDesc       = prometheus.NewDesc("redcrawl_redis_up", "1 when the scrape could read the crawl from Redis.", nil, nil)
)

func (c *crawlCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- frontierDesc
	ch <- pausedDesc
	ch <- upDesc
}

func (c *crawlCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sz, err := c.w.fr.Sizes(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	for state, n := range map[string]int64{"queued": sz.Queued, "leased": sz.InFlight, "deferred": sz.Deferred, "failed": sz.Failed} {
		ch <- prometheus.MustNewConstMetric(frontierDesc, prometheus.GaugeValue, float64(n), state)
	}
	if paused, err := c.w.fr.Hosts.Paused(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(pausedDesc, prometheus.GaugeValue, float64(len(paused)))
	}
}

// Healthy reports whether the crawl can go on: Redis answers and the
// crawl exists (for /healthz).
func (w *Worker) Healthy(ctx context.Context) error {
	ok, err := w.fr.Exists(ctx)
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if !ok {
		return fmt.Errorf("%w %q", ErrGone, w.name)
	}
	return nil
}

// Metrics is the worker's Prometheus registry, to serve on /metrics.
func (w *Worker) Metrics() prometheus.Gatherer { return w.metrics.reg }
