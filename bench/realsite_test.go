package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocolly/colly/v2"
	"github.com/redcrawl/crawler/internal/redistest"
)

// The real site: three manuals from Debian's packages, each on a loopback
// host of its own behind nginx, and a fourth host whose one page links
// the three (the seed). apt-get install nginx postgresql-doc-15
// python3.11-doc apache2-doc.
var manuals = []struct{ host, dir string }{
	{"127.0.0.41", "/usr/share/doc/postgresql-doc-15/html"},
	{"127.0.0.42", "/usr/share/doc/python3.11/html"},
	{"127.0.0.43", "/usr/share/doc/apache2-doc/manual"},
}

const frontHost = "127.0.0.44"

// collyEnv makes the test binary a colly crawl of the seed it names
// (TestMain), so that colly's CPU is its own process's, as each worker's is.
const collyEnv = "REDCRAWL_BENCH_COLLY"

// docSite is nginx serving the manuals; its access log is one line a
// request ("host uri status").
type docSite struct {
	seeds []string // the four hosts' index pages: a crawl's scope is its seeds' hosts
	log   string
}

func startDocSite(b *testing.B) *docSite {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		b.Skip("no nginx (apt-get install nginx)")
	}
	for _, m := range manuals {
		if _, err := os.Stat(m.dir + "/index.html"); err != nil {
			b.Skipf("no manual at %s (apt-get install postgresql-doc-15 python3.11-doc apache2-doc)", m.dir)
		}
	}
	// Not b.TempDir: nginx's workers, which are not root when it is, must
	// read the front page, and the test's directory is its user's alone.
	dir, err := os.MkdirTemp("", "realsite")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	port := freePort(b)
	var front bytes.Buffer
	front.WriteString("<!DOCTYPE html><title>Three manuals</title><ul>")
	for _, m := range manuals {
		fmt.Fprintf(&front, `<li><a href="http://%s:%d/index.html">%s</a>`, m.host, port, filepath.Base(filepath.Dir(m.dir)))
	}
	front.WriteString("</ul>")
	os.MkdirAll(dir+"/front", 0o755)
	os.MkdirAll(dir+"/logs", 0o755)
	if err := os.WriteFile(dir+"/front/index.html", front.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, "worker_processes 1; error_log %s/logs/error.log; pid %s/nginx.pid;\n", dir, dir)
	conf.WriteString("events { worker_connections 4096; }\n")
	fmt.Fprintf(&conf, "http { include /etc/nginx/mime.types; log_format hit '$server_addr $request_uri $status'; access_log %s/logs/access.log hit;\n", dir)
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&conf, "  %s_temp_path %s/%s;\n", t, dir, t)
	}
	for _, m := range append(manuals, struct{ host, dir string }{frontHost, dir + "/front"}) {
		fmt.Fprintf(&conf, "  server { listen %s:%d; root %s; }\n", m.host, port, m.dir)
	}
	conf.WriteString("}\n")
	if err := os.WriteFile(dir+"/nginx.conf", []byte(conf.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-c", dir+"/nginx.conf", "-g", "daemon off;")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT)
		<-exited
	})
	addr := net.JoinHostPort(frontHost, fmt.Sprint(port))
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			b.Fatalf("nginx exited: %s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if i == 500 {
			b.Fatalf("nginx not listening on %s after 10 s: %s", addr, out.String())
		}
	}
	site := &docSite{log: dir + "/logs/access.log"}
	for _, m := range append(manuals, struct{ host, dir string }{frontHost, ""}) {
		site.seeds = append(site.seeds, fmt.Sprintf("http://%s:%d/index.html", m.host, port))
	}
	return site
}

func freePort(b *testing.B) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// requests reads the access log since it was last cleared: how many
// requests each URL had (robots.txt aside), and the URLs that answered 200.
func (s *docSite) requests(b *testing.B) (count map[string]int, ok map[string]bool) {
	f, err := os.Open(s.log)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	count, ok = map[string]int{}, map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 || fs[1] == "/robots.txt" {
			continue
		}
		u := fs[0] + fs[1]
		count[u]++
		if fs[2] == "200" {
			ok[u] = true
		}
	}
	return count, ok
}

func (s *docSite) clear(b *testing.B) {
	if err := os.Truncate(s.log, 0); err != nil {
		b.Fatal(err)
	}
}

// crawlerBinary builds cmd/crawler once for the run, in the crawler's own
// module (the repository's root: bench/ is a module of its own).
func crawlerBinary(b *testing.B) string {
	exe := filepath.Join(b.TempDir(), "crawler")
	build := exec.Command("go", "build", "-o", exe, "./cmd/crawler")
	build.Dir = ".."
	out, err := build.CombinedOutput()
	if err != nil {
		b.Fatalf("go build: %v: %s", err, out)
	}
	return exe
}

// procCPU is a finished process's CPU time (user + system).
func procCPU(cmd *exec.Cmd) time.Duration {
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type siteRun struct {
	pages   int
	wall    time.Duration
	cpu     time.Duration // the crawler's processes, and Redis for RedCrawl
	redis   time.Duration
	count   map[string]int
	fetched map[string]bool
}

func (r siteRun) twice() int {
	n := 0
	for _, c := range r.count {
		n += c - 1
	}
	return n
}

// BenchmarkRealSite crawls the three manuals with RedCrawl (two `crawler
// work -c 16` processes, --rate inf, a redis-server of their own) and with
// colly v2 (a process of its own, 16 at a time, following a[href] on the
// four hosts, fragments dropped), in the same run, and reports each one's
// pages a second and CPU a page (RedCrawl's: both workers and Redis). It
// fails if RedCrawl fetched a URL twice or missed one that colly fetched.
//
//	cd bench && go test -run '^$' -bench RealSite -benchtime 1x -count 3 .
func BenchmarkRealSite(b *testing.B) {
	site := startDocSite(b)
	exe := crawlerBinary(b)
	for i := 0; i < b.N; i++ {
		rc := redcrawlSite(b, site, exe)
		co := collySite(b, site)
		for u, n := range rc.count {
			if n > 1 {
				b.Errorf("RedCrawl fetched %s %d times", u, n)
			}
		}
		var missing []string
		for u := range co.fetched {
			if !rc.fetched[u] {
				missing = append(missing, u)
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			b.Errorf("RedCrawl missed %d URLs colly fetched, such as %s", len(missing), missing[:min(5, len(missing))])
		}
		rcRate, coRate := float64(rc.pages)/rc.wall.Seconds(), float64(co.pages)/co.wall.Seconds()
		b.ReportMetric(rcRate, "redcrawl-pages/s")
		b.ReportMetric(coRate, "colly-pages/s")
		b.ReportMetric(rcRate/coRate, "speed-ratio")
		b.ReportMetric(rc.cpu.Seconds(), "redcrawl-cpu-s")
		b.ReportMetric(rc.redis.Seconds(), "of-which-redis-s")
		b.ReportMetric(co.cpu.Seconds(), "colly-cpu-s")
		b.ReportMetric(rc.cpu.Seconds()/co.cpu.Seconds(), "cpu-ratio")
		b.ReportMetric(float64(rc.pages), "redcrawl-pages")
		b.ReportMetric(float64(co.pages), "colly-pages")
		b.ReportMetric(float64(rc.twice()), "redcrawl-twice")
		b.ReportMetric(float64(co.twice()), "colly-twice")
		b.ReportMetric(0, "ns/op")
	}
}

func redcrawlSite(b *testing.B, site *docSite, exe string) siteRun {
	s := redistest.Real(b)
	defer s.Stop()
	run := func(args ...string) *exec.Cmd {
		cmd := exec.Command(exe, append([]string{"--redis", s.URL(), "--crawl", "site"}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
		return cmd
	}
	wait := func(cmd *exec.Cmd) {
		if err := cmd.Wait(); err != nil {
			b.Fatalf("%s: %v: %s", strings.Join(cmd.Args[3:], " "), err, cmd.Stdout)
		}
	}
	wait(run(append([]string{"seed", "--rate", "inf", "--allow-private"}, site.seeds...)...))
	site.clear(b)
	redis0 := redistest.CPU(b, s.Client)
	start := time.Now()
	workers := []*exec.Cmd{
		run("work", "-c", "16", "--exit-when-done", "--id", "a", "--progress-every", "0"),
		run("work", "-c", "16", "--exit-when-done", "--id", "b", "--progress-every", "0"),
	}
	var r siteRun
	for _, w := range workers {
		wait(w)
		r.cpu += procCPU(w)
	}
	r.wall = time.Since(start)
	r.redis = redistest.CPU(b, s.Client) - redis0
	r.cpu += r.redis
	r.count, r.fetched = site.requests(b)
	r.pages = len(r.fetched)
	return r
}

func collySite(b *testing.B, site *docSite) siteRun {
	site.clear(b)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), collyEnv+"="+strings.Join(site.seeds, " "))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("colly: %v: %s", err, out.String())
	}
	r := siteRun{wall: time.Since(start), cpu: procCPU(cmd)}
	r.count, r.fetched = site.requests(b)
	r.pages = len(r.fetched)
	return r
}

// collyCrawl is the colly process: 16 requests at a time, a[href] followed
// on the seeds' hosts, each URL once without its fragment, as RedCrawl
// canonicalizes.
func collyCrawl(seeds string) {
	var domains []string
	for _, s := range strings.Fields(seeds) {
		u, err := url.Parse(s)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		domains = append(domains, u.Hostname())
	}
	c := colly.NewCollector(colly.AllowedDomains(domains...), colly.Async(true))
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: 16}); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	var pages atomic.Int64
	c.OnResponse(func(*colly.Response) { pages.Add(1) })
	// A seen-set of our own before colly's Visit: colly's check of a URL
	// it saw parses it again, and in Async mode two pages linking one URL
	// at once may both pass it (a crawl fetched 150 to 975 URLs twice).
	var mu sync.Mutex
	seen := map[string]bool{}
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		u, err := url.Parse(e.Request.AbsoluteURL(e.Attr("href")))
		if err != nil {
			return
		}
		u.Fragment = ""
		s := u.String()
		mu.Lock()
		old := seen[s]
		seen[s] = true
		mu.Unlock()
		if !old {
			e.Request.Visit(s)
		}
	})
	for _, s := range strings.Fields(seeds) {
		seen[s] = true
		if err := c.Visit(s); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	}
	c.Wait()
	fmt.Println(pages.Load())
}

// BenchmarkRealSiteInProcess is RedCrawl's half of BenchmarkRealSite with
// the two workers (16 loops each) in the benchmark's process, for its
// profile: go test -run '^$' -bench RealSiteInProcess -benchtime 1x
// -cpuprofile cpu.out . (nginx's and Redis's CPU are their own).
func BenchmarkRealSiteInProcess(b *testing.B) {
	site := startDocSite(b)
	for i := 0; i < b.N; i++ {
		site.clear(b)
		start := time.Now()
		r := redcrawlCPU(b, 16, site.seeds...)
		wall := time.Since(start)
		count, fetched := site.requests(b)
		for u, n := range count {
			if n > 1 {
				b.Errorf("fetched %s %d times", u, n)
			}
		}
		b.ReportMetric(float64(len(fetched))/wall.Seconds(), "pages/s")
		b.ReportMetric(float64((r.workers+r.redis).Microseconds())/float64(len(fetched)), "µs/page")
		b.ReportMetric(float64(r.redis.Microseconds())/float64(len(fetched)), "redis-µs/page")
		b.ReportMetric(float64(len(fetched)), "pages")
		b.ReportMetric(0, "ns/op")
	}
}
