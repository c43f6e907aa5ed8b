package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/dashboard"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// queuedSizes are the crawls BenchmarkQueuedSizes puts the same pages
// beside: URLs queued, over hosts (ten a host).
var queuedSizes = []struct{ urls, hosts int }{{1_000, 100}, {100_000, 10_000}, {1_000_000, 100_000}, {10_000_000, 1_000_000}}

// BenchmarkQueuedSizes is the cost of a crawl as it grows: it crawls the
// same pages of the test site (4 hosts × 1 001 pages a round, two workers
// of 8 loops, no rate limit) while 10³, 10⁵, 10⁶ and 10⁷ other URLs sit
// queued, on 10² to 10⁶ hosts that wait for their tokens (a polite crawl's
// hosts between two requests: each host's bucket is due a day later), and
// reports at each size Redis CPU and round trips a page of the crawl,
// bytes a queued URL, and the time of a sweep, of `status --json`
// (status.Read and its JSON) and of the dashboard's state, each the
// slowest of three.
//
// Every size has a redis-server of its own, filled first, and the rounds
// go from size to size (round 1 of each, then round 2 …), so that what
// the machine does meanwhile weighs on every size alike: on this 2-core
// machine one size's Redis CPU a page moved by a third from run to run.
// Redis has a core of its own (taskset, where there are two).
// REDCRAWL_BENCH_MAX_QUEUED stops at a smaller size (filling 10⁷ URLs
// takes a minute and 1.3 GB); REDCRAWL_BENCH_PERF=DIR samples each
// Redis's stacks during its rounds (perf record, DIR/queued-N.data).
//
//	cd bench && go test -run '^$' -bench QueuedSizes -benchtime 1x -timeout 1h .
func BenchmarkQueuedSizes(b *testing.B) {
	most := math.MaxInt
	if v := os.Getenv("REDCRAWL_BENCH_MAX_QUEUED"); v != "" {
		most, _ = strconv.Atoi(v)
	}
	for i := 0; i < b.N; i++ {
		var crawls []*sizedCrawl
		for _, sz := range queuedSizes {
			if sz.urls <= most {
				crawls = append(crawls, newSizedCrawl(b, sz.urls, sz.hosts))
			}
		}
		for r := 0; r < rounds; r++ {
			for _, c := range crawls {
				c.round(b)
			}
		}
		for _, c := range crawls {
			c.site.Close()
			c.report(b)
		}
	}
}

// rounds are the crawls of the site measured at each size, each of a new
// site (its own port: new URLs); siteConfig is one round's site.
const rounds = 5

var siteConfig = testsite.Config{Hosts: 4, Pages: 1000}

// sizedCrawl is one size's crawl: its Redis, filled, and, during each of
// its rounds, its two workers.
type sizedCrawl struct {
	urls, hosts int
	s           *redistest.Server
	fr          *frontier.Frontier
	set         settings.Settings
	perURL      float64 // bytes a queued URL
	idle        time.Duration
	counters    []*atomic.Int64 // the workers' round trips
	cancel      context.CancelFunc
	wg          sync.WaitGroup
	site        *flatSite

	cpu, elapsed time.Duration
	pages, rt    int64
	perPage      []float64 // Redis µs a page, round by round
}

func newSizedCrawl(b *testing.B, urls, hosts int) *sizedCrawl {
	ctx := context.Background()
	c := &sizedCrawl{urls: urls, hosts: hosts, s: redistest.Real(b)}
	s := c.s
	pin(b, s)
	c.set = settings.Default()
	c.set.Rate, c.set.AllowPrivate, c.set.Sitemaps = math.Inf(1), true, false
	// A filter of one in a million false positives at its load: at the
	// default one in a thousand, a round's 4 044 new URLs would lose one
	// or two to it, and the round would wait for them.
	c.set.ExpectedURLs, c.set.FPRate = int64(urls)+100_000, 1e-6
	// The crawl's first seed: on the first of the hosts that wait a day.
	seeds := []*url.URL{must(url.Parse("http://www.host-0000000.example.org/docs/index.html"))}
	if _, err := admin.Seed(ctx, s.Client, "flat", c.set, seeds); err != nil {
		b.Fatal(err)
	}
	set, err := settings.Load(ctx, s.Client, "flat") // with the instance id the seed gave it
	if err != nil {
		b.Fatal(err)
	}
	c.set = set
	if c.fr, err = crawl.OpenFrontier(ctx, s.Client, "flat", set); err != nil {
		b.Fatal(err)
	}
	mem0 := s.UsedMemory(b)
	fill(b, c.fr, urls, hosts)
	wait(b, s, hosts)
	sz, err := c.fr.Sizes(ctx)
	if err != nil || sz.Queued < int64(urls)*99/100 {
		b.Fatalf("%d queued of %d (%v)", sz.Queued, urls, err)
	}
	c.perURL = float64(s.UsedMemory(b)-mem0) / float64(sz.Queued-1)

	idle0 := redistest.CPU(b, s.Client)
	time.Sleep(time.Second)
	c.idle = redistest.CPU(b, s.Client) - idle0

	return c
}

// startWorkers starts the size's two workers, for a round: the other
// sizes' Redis servers then have no client to answer.
func (c *sizedCrawl) startWorkers(b *testing.B) {
	ctx := context.Background()
	wctx, cancel := context.WithCancel(ctx)
	c.cancel, c.counters = cancel, nil
	for i := 0; i < 2; i++ {
		rc := c.s.NewClient(b)
		counter := redistest.RoundTrips(rc)
		w, err := crawl.NewWorker(ctx, rc, "flat", crawl.Options{ID: fmt.Sprint("w", i), Concurrency: 8})
		if err != nil {
			b.Fatal(err)
		}
		c.counters = append(c.counters, counter)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			w.Run(wctx)
		}()
	}
}

func (c *sizedCrawl) roundTrips() int64 {
	var n int64
	for _, rc := range c.counters {
		n += rc.Load()
	}
	return n
}

// round seeds a new site and measures its crawl, which ends when the site
// saw every page of it (the workers do not end: the crawl is not over,
// the other URLs wait).
func (c *sizedCrawl) round(b *testing.B) {
	ctx := context.Background()
	if c.site != nil {
		c.site.Close()
	}
	site := startFlatSite(b)
	c.site = &site
	c.startWorkers(b)
	defer c.stop()
	stopPerf := perfRedis(b, c.s, fmt.Sprintf("queued-%d-round-%d", c.urls, len(c.perPage)))
	defer stopPerf()
	p0 := must(c.fr.Stats(ctx))["pages"]
	cpu0, rt0, start := redistest.CPU(b, c.s.Client), c.roundTrips(), time.Now()
	if _, err := admin.Seed(ctx, c.s.Client, "flat", c.set, site.seeds); err != nil {
		b.Fatal(err)
	}
	for len(site.Missing()) > 0 {
		if time.Since(start) > time.Minute {
			b.Fatalf("%d queued: %d pages of %d not fetched in a minute, e.g. %v; counters %v", c.urls, len(site.Missing()), len(site.Truth()),
				site.Missing()[:1], must(c.fr.Stats(ctx)))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cpu, elapsed := redistest.CPU(b, c.s.Client)-cpu0, time.Since(start)
	n := must(c.fr.Stats(ctx))["pages"] - p0
	c.cpu, c.elapsed, c.pages, c.rt = c.cpu+cpu, c.elapsed+elapsed, c.pages+n, c.rt+c.roundTrips()-rt0
	c.perPage = append(c.perPage, float64(cpu.Microseconds())/float64(n))
}

func (c *sizedCrawl) stop() {
	c.cancel()
	c.wg.Wait()
}

// report times what reads or walks the whole crawl (a sweep, status, the
// dashboard) and reports the size's figures as a benchmark of its own.
func (c *sizedCrawl) report(b *testing.B) {
	ctx := context.Background()
	s, fr := c.s, c.fr
	if os.Getenv("BENCH_COMMANDSTATS") != "" { // where Redis spent the crawl's time, command by command
		b.Logf("%s", s.Client.Info(ctx, "commandstats").Val())
	}
	lock, err := leader.Obtain(ctx, s.Client, fr.LeaderKey(), "bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	sweep := slowest(b, func() error {
		_, err := fr.Schedule(ctx, leader.EpochKey(fr.LeaderKey()), lock.Epoch(), 3, 1000, 0)
		return err
	})
	statusTime := slowest(b, func() error {
		st, err := status.Read(ctx, s.Client, "flat")
		if err == nil {
			_, err = json.Marshal(st)
		}
		return err
	})
	dash := slowest(b, func() error {
		st, err := dashboard.Read(ctx, s.Client, "flat")
		if err == nil {
			_, err = json.Marshal(st)
		}
		return err
	})
	s.Stop()
	b.Run(fmt.Sprintf("queued=%d/hosts=%d", c.urls, c.hosts), func(b *testing.B) {
		b.Logf("Redis µs a page, round by round: %.1f", c.perPage)
		pages := float64(c.pages)
		b.ReportMetric(float64(c.cpu.Microseconds())/pages, "redis-µs/page")
		b.ReportMetric((c.cpu-time.Duration(float64(c.idle)*c.elapsed.Seconds())).Seconds()*1e6/pages, "net-µs/page")
		b.ReportMetric(float64(c.rt)/pages, "RT/page")
		b.ReportMetric(pages/c.elapsed.Seconds(), "pages/s")
		b.ReportMetric(c.perURL, "B/queued-URL")
		b.ReportMetric(sweep.Seconds()*1000, "sweep-ms")
		b.ReportMetric(statusTime.Seconds()*1000, "status-ms")
		b.ReportMetric(dash.Seconds()*1000, "dashboard-ms")
		b.ReportMetric(float64(c.idle.Microseconds()), "idle-µs/s")
		b.ReportMetric(0, "ns/op")
	})
}

type flatSite struct {
	*testsite.Site
	seeds []*url.URL
}

func startFlatSite(b *testing.B) flatSite {
	b.Helper()
	ts, err := testsite.Start(siteConfig)
	if err != nil {
		b.Fatal(err)
	}
	fs := flatSite{Site: ts}
	for _, r := range ts.Roots() {
		u, _ := url.Parse(r)
		fs.seeds = append(fs.seeds, u)
	}
	return fs
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// fill queues urls URLs of ~60 characters over hosts hosts (ten a page,
// the page of the same host), four calls at a time.
func fill(b *testing.B, fr *frontier.Frontier, urls, hosts int) {
	const batch, callers = 1000, 4
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for c := 0; c < callers; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			items := make([]frontier.Item, 0, batch)
			for n := c * batch; n < urls; n += callers * batch {
				items = items[:0]
				for i := n; i < min(n+batch, urls); i++ {
					// URL i is link i%per of its host's index page (per a
					// host), as a page's links come in one exchange.
					per := urls / hosts
					host, link := i/per, i%per
					items = append(items, frontier.Item{URL: fmt.Sprintf("http://www.host-%07d.example.org/docs/section-%02d/page-%05d.html", host, link%97, link),
						Depth: 3, Parent: fmt.Sprintf("http://www.host-%07d.example.org/docs/index.html", host)})
				}
				if _, err := fr.Enqueue(context.Background(), items); err != nil {
					errs <- err
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// wait makes the filler hosts wait a day for their next token: their
// buckets' tat in ready, a polite crawl's hosts between two requests.
func wait(b *testing.B, s *redistest.Server, hosts int) {
	ctx := context.Background()
	ready := keyspace.KeysFor("flat").Ready
	later := float64(time.Now().Add(24 * time.Hour).UnixMilli())
	for h := 0; h < hosts; h += 10_000 {
		pipe := s.Client.Pipeline()
		for i := h; i < min(h+10_000, hosts); i++ {
			pipe.ZAddXX(ctx, ready, redis.Z{Score: later, Member: fmt.Sprintf("www.host-%07d.example.org", i)})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// pin gives Redis the first core and this process (workers, site) the
// others, where the machine has two or more and taskset is installed: on
// two cores shared by all, Redis's CPU a page moved by a third from run to
// run with the workers' load (descheduled, its caches taken).
func pin(b *testing.B, s *redistest.Server) {
	if runtime.NumCPU() < 2 {
		return
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		b.Log("no taskset: Redis and the workers share the cores")
		return
	}
	pid := redisPID(b, s)
	others := fmt.Sprintf("1-%d", runtime.NumCPU()-1)
	for _, args := range [][]string{{"-a", "-p", "-c", "0", pid}, {"-a", "-p", "-c", others, strconv.Itoa(os.Getpid())}} {
		if out, err := exec.Command(taskset, args...).CombinedOutput(); err != nil {
			b.Fatalf("taskset %v: %v: %s", args, err, out)
		}
	}
	b.Cleanup(func() {
		exec.Command(taskset, "-a", "-p", "-c", fmt.Sprintf("0-%d", runtime.NumCPU()-1), strconv.Itoa(os.Getpid())).Run()
	})
}

// perfRedis, with REDCRAWL_BENCH_PERF=DIR, samples Redis's stacks with
// perf (cpu-clock) into DIR/NAME.data until the returned func is called:
// where Redis spends a page's time at each size.
func perfRedis(b *testing.B, s *redistest.Server, name string) func() {
	dir := os.Getenv("REDCRAWL_BENCH_PERF")
	if dir == "" {
		return func() {}
	}
	cmd := exec.Command("perf", "record", "-e", "cpu-clock", "-F", "1999", "-g", "-p", redisPID(b, s), "-o", dir+"/"+name+".data")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
}

// redisPID is the process id s's server gives (INFO server).
func redisPID(b *testing.B, s *redistest.Server) string {
	info, err := s.Client.InfoMap(context.Background(), "server").Result()
	if err != nil {
		b.Fatal(err)
	}
	return info["Server"]["process_id"]
}

// slowest runs fn three times and returns its slowest time.
func slowest(b *testing.B, fn func() error) time.Duration {
	var worst time.Duration
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(t0))
	}
	return worst
}
