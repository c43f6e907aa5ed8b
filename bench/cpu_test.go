package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocolly/colly/v2"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
)

// serveEnv makes the test binary a static file server of that directory
// (TestMain): the site runs in its own process, so that its CPU is not
// counted as the crawler's.
const serveEnv = "REDCRAWL_BENCH_SERVE_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(serveEnv); dir != "" {
		serve(dir)
		return
	}
	if seed := os.Getenv(collyEnv); seed != "" {
		collyCrawl(seed)
		return
	}
	os.Exit(m.Run())
}

// serve listens on loopback, prints the address, and serves dir until
// its standard input closes (the benchmark ended, or died).
func serve(dir string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	go http.Serve(ln, http.FileServer(http.Dir(dir)))
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// startSite starts the file server process on dir and returns its root URL.
func startSite(b *testing.B, dir string) string {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serveEnv+"="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "ERROR") {
		b.Fatalf("site server: %q, %v", line, err)
	}
	return "http://" + strings.TrimSpace(line) + "/"
}

// cpuNow is this process's CPU time so far (user + system).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// docsDir is the real site the CPU comparison crawls: Debian's Python
// documentation (apt-get install python3.11-doc), or REDCRAWL_DOCS.
func docsDir(b *testing.B) string {
	dir := os.Getenv("REDCRAWL_DOCS")
	if dir == "" {
		dir = "/usr/share/doc/python3.11/html"
	}
	if _, err := os.Stat(dir + "/index.html"); err != nil {
		b.Skipf("no site to crawl at %s (apt-get install python3.11-doc, or set REDCRAWL_DOCS to a directory with an index.html)", dir)
	}
	return dir
}

// BenchmarkCPUvsColly crawls a real documentation site served from another
// process, with RedCrawl (two workers of 8, a real redis-server) and then
// with colly v2 (16 at a time, following a[href] on the same host,
// fragments dropped), in
// the same run, and reports CPU per page: RedCrawl's workers plus Redis,
// colly's process, and their ratio. Run with -benchtime 1x; repeat with
// -count for a range.
func BenchmarkCPUvsColly(b *testing.B) {
	dir := docsDir(b)
	root := startSite(b, dir)
	for i := 0; i < b.N; i++ {
		rc := redcrawlCPU(b, 8, root)
		co := collyCPU(b, root)
		rcPer := float64((rc.workers + rc.redis).Microseconds()) / float64(rc.pages)
		coPer := float64(co.workers.Microseconds()) / float64(co.pages)
		b.ReportMetric(rcPer, "redcrawl-µs/page")
		b.ReportMetric(float64(rc.redis.Microseconds())/float64(rc.pages), "of-which-redis-µs/page")
		b.ReportMetric(coPer, "colly-µs/page")
		b.ReportMetric(rcPer/coPer, "ratio")
		b.ReportMetric(float64(rc.pages), "redcrawl-pages")
		b.ReportMetric(float64(co.pages), "colly-pages")
		b.ReportMetric(0, "ns/op")
	}
}

type cpuRun struct {
	pages          int64
	workers, redis time.Duration
}

// redcrawlCPU crawls from roots with two workers of loops fetch loops each,
// in this process, and measures the CPU they and Redis took.
func redcrawlCPU(b *testing.B, loops int, roots ...string) cpuRun {
	s := redistest.Real(b)
	ctx := context.Background()
	set := settings.Default()
	set.Rate, set.AllowPrivate, set.Sitemaps = math.Inf(1), true, false
	var seeds []*url.URL
	for _, r := range roots {
		u, _ := url.Parse(r)
		seeds = append(seeds, u)
	}
	if _, err := admin.Seed(ctx, s.Client, "cpu", set, seeds); err != nil {
		b.Fatal(err)
	}
	cpu0, redis0 := cpuNow(), redistest.CPU(b, s.Client)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		w, err := crawl.NewWorker(ctx, s.NewClient(b), "cpu", crawl.Options{ID: fmt.Sprint("w", i), Concurrency: loops, ExitWhenDone: true})
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	run := cpuRun{workers: cpuNow() - cpu0, redis: redistest.CPU(b, s.Client) - redis0}
	if fr, err := frontier.New(s.Client, "cpu", frontier.Options{Shards: 1}); err == nil {
		counts, _ := fr.Stats(ctx)
		run.pages = counts["pages"]
	}
	return run
}

func collyCPU(b *testing.B, root string) cpuRun {
	u, _ := url.Parse(root)
	c := colly.NewCollector(colly.AllowedDomains(u.Hostname()), colly.Async(true))
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: 16}); err != nil {
		b.Fatal(err)
	}
	var pages atomic.Int64
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		// Without the fragment, as RedCrawl canonicalizes: colly would fetch
		// page.html#a and page.html#b each (19 937 requests for this site's
		// ~530 pages).
		if u, err := url.Parse(e.Request.AbsoluteURL(e.Attr("href"))); err == nil {
			u.Fragment = ""
			e.Request.Visit(u.String())
		}
	})
	cpu0 := cpuNow()
	if err := c.Visit(root); err != nil {
		b.Fatal(err)
	}
	c.Wait()
	return cpuRun{pages: pages.Load(), workers: cpuNow() - cpu0}
}
