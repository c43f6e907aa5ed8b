// Package e2e runs the built crawler binary against a real redis-server
// and the test site, killing workers and the scheduler on the way.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/pace"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

func build(t *testing.T) string {
	t.Helper()
	// go test caches a passing result by what the test itself reads: it
	// cannot see that the binary built here depends on the module's
	// sources. Looking at each of them makes an edit anywhere re-run this.
	filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".lua") || strings.HasSuffix(p, "go.mod")) {
			os.Stat(p)
		}
		return nil
	})
	bin := filepath.Join(t.TempDir(), "crawler")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/redcrawl/crawler/cmd/crawler").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type proc struct {
	id   string
	cmd  *exec.Cmd
	log  *syncBuf
	done chan error
}

// awaitCleanExit waits (at most 4 minutes) for a worker that should exit
// 0 now that the crawl is done.
func (p *proc) awaitCleanExit(t *testing.T) {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("worker %s exited with %v\n%s", p.id, err, p.log.String())
		}
	case <-time.After(4 * time.Minute):
		t.Fatalf("worker %s did not exit when the crawl was done\n%s", p.id, p.log.String())
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type harness struct {
	t     *testing.T
	bin   string
	redis string
	crawl string // "" for "e2e"
	mu    sync.Mutex
	procs map[string]*proc
}

func (h *harness) crawlName() string {
	if h.crawl == "" {
		return "e2e"
	}
	return h.crawl
}

func (h *harness) run(args ...string) []byte {
	h.t.Helper()
	cmd := exec.Command(h.bin, append([]string{"--redis", h.redis, "--crawl", h.crawlName()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("crawler %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// try runs the crawler and returns what it printed and how it exited.
func (h *harness) try(args ...string) (string, string, error) {
	cmd := exec.Command(h.bin, append([]string{"--redis", h.redis, "--crawl", h.crawlName()}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func (h *harness) startWorker(id string, flags ...string) *proc {
	cmd := exec.Command(h.bin, append([]string{"--redis", h.redis, "--crawl", "e2e", "work", "-c", "8", "--exit-when-done", "--id", id}, flags...)...)
	p := &proc{id: id, cmd: cmd, log: &syncBuf{}, done: make(chan error, 1)}
	cmd.Stderr = p.log
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { cmd.Process.Kill() })
	go func() { p.done <- cmd.Wait() }()
	h.mu.Lock()
	h.procs[id] = p
	h.mu.Unlock()
	return p
}

type status struct {
	Counters map[string]int64 `json:"counters"`
	Leader   *struct {
		ID    string `json:"id"`
		Epoch int64  `json:"epoch"`
	} `json:"leader"`
	Done    bool     `json:"done"`
	Workers []string `json:"workers"`
	Hold    *struct {
		By string `json:"by"`
	} `json:"hold"`
	Frontier struct {
		InFlight int64 `json:"in_flight"`
	} `json:"frontier"`
}

func (h *harness) status() status {
	var st status
	if err := json.Unmarshal(h.run("status", "--json"), &st); err != nil {
		h.t.Fatal(err)
	}
	return st
}

// waitFor polls status (the crawl's own progress is the event) until cond holds.
func (h *harness) waitFor(what string, cond func(status) bool) status {
	h.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		if st := h.status(); cond(st) {
			return st
		}
		time.Sleep(200 * time.Millisecond)
	}
	h.t.Fatalf("timed out waiting for %s", what)
	return status{}
}

// setup starts a real redis-server and the test site, builds the crawler
// and seeds the site's roots with the given flags (after --allow-private).
func setup(t *testing.T, cfg testsite.Config, seedFlags ...string) (*harness, *redistest.Server, *testsite.Site) {
	t.Helper()
	s := redistest.Real(t)
	site, err := testsite.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(site.Close)
	h := &harness{t: t, bin: build(t), redis: s.URL(), procs: map[string]*proc{}}
	h.run(append(append([]string{"seed", "--allow-private"}, seedFlags...), site.Roots()...)...)
	return h, s, site
}

// requireTruth fails the test for each truth URL the site never served.
func requireTruth(t *testing.T, site *testsite.Site) {
	t.Helper()
	missing := site.Missing()
	for i, u := range missing {
		if i < 10 {
			t.Errorf("never fetched: %s", u)
		}
	}
	truth := len(site.Truth())
	t.Logf("%d of %d truth URLs fetched; %d URLs requested in all", truth-len(missing), truth, len(site.Stats().Fetched))
}

// requirePace fails the test for each host of the site that got more
// than rate + burst requests in one second.
func requirePace(t *testing.T, ss testsite.Stats, rate, burst int) {
	t.Helper()
	for host, hs := range ss.Hosts {
		t.Logf("%s: %d requests, at most %d in one second (limit %d + %d)", host, hs.Requests, hs.MaxPerSecond, rate, burst)
		if hs.MaxPerSecond > rate+burst {
			t.Errorf("%s saw %d requests in one second, over rate+burst = %d", host, hs.MaxPerSecond, rate+burst)
		}
	}
}

var leadingRE = regexp.MustCompile(`time=(\S+) level=INFO msg="leading as scheduler" worker=\S+ epoch=(\d+)`)

// The whole promise: seed once, three workers, SIGKILL one worker and then
// the scheduler mid-crawl, restart them; every page of the site is still
// crawled exactly as configured.
func TestCrawlSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	const hosts, pages, rate, burst = 4, 500, 40, 4
	h, _, site := setup(t, testsite.Config{Hosts: hosts, Pages: pages, Latency: 2 * time.Millisecond, ListenBase: "127.0.0.10"},
		"--rate", strconv.Itoa(rate), "--burst", strconv.Itoa(burst))
	for _, id := range []string{"w1", "w2", "w3"} {
		h.startWorker(id)
	}
	truth := site.Truth()

	// Two kills at random moments (the seed is logged to replay them):
	// first a worker that is not the scheduler, then the scheduler.
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	first, second := 0.15+0.3*rng.Float64(), 0.5+0.35*rng.Float64()
	t.Logf("kills at %.0f %% and %.0f %% of the pages (seed %d)", 100*first, 100*second, seed)
	st := h.waitFor("the first kill's moment and a leader", func(st status) bool {
		return st.Counters["pages"] >= int64(first*float64(len(truth))) && st.Leader != nil
	})
	victim := "w1"
	if st.Leader.ID == victim {
		victim = "w2"
	}
	h.procs[victim].cmd.Process.Signal(syscall.SIGKILL)
	t.Logf("SIGKILLed worker %s at %d pages", victim, st.Counters["pages"])
	h.startWorker("w4")

	// Then the scheduler itself.
	st = h.waitFor("the second kill's moment", func(st status) bool {
		return st.Counters["pages"] >= int64(second*float64(len(truth))) && st.Leader != nil
	})
	leaderID := st.Leader.ID
	h.procs[leaderID].cmd.Process.Signal(syscall.SIGKILL)
	t.Logf("SIGKILLed the scheduler %s (epoch %d) at %d pages", leaderID, st.Leader.Epoch, st.Counters["pages"])
	h.startWorker("w5")

	for id, p := range h.procs {
		if id == victim || id == leaderID {
			<-p.done
			continue
		}
		p.awaitCleanExit(t)
	}

	// Every truth URL fetched, nothing disallowed, nothing fetched too often.
	ss := site.Stats()
	requireTruth(t, site)
	if len(ss.Disallowed) > 0 {
		t.Errorf("robots-disallowed URLs fetched: %v", ss.Disallowed)
	}
	// Two SIGKILLs: a page may be fetched once more for each (a flaky
	// page twice by design, plus once per kill), and each kill costs at
	// most the pages its worker had in flight or finished and not sent.
	if over := site.Overfetched(2); len(over) > 0 {
		t.Errorf("URLs fetched more often than the two kills explain: %v", over)
	}
	bound := 2 * pace.CrashRefetches(8) // workers run with -c 8
	t.Logf("fetched again: %d pages (bound: %d for two kills of workers of 8 loops)", ss.Extra(), bound)
	if ss.Extra() > bound {
		t.Errorf("%d pages fetched again; two kills of workers of 8 loops cost at most %d", ss.Extra(), bound)
	}
	requirePace(t, ss, rate, burst)
	// Nothing out of scope: every record's host is one of the site's.
	inSite := map[string]bool{}
	for _, hst := range site.Hosts() {
		inSite[hst] = true
	}
	sc := bufio.NewScanner(bytes.NewReader(h.run("export")))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct{ URL string }
		json.Unmarshal(sc.Bytes(), &rec)
		if u, err := url.Parse(rec.URL); err != nil || !inSite[u.Host] {
			t.Errorf("out-of-scope record: %s", rec.URL)
		}
	}
	// Epochs: each announced by one worker, strictly increasing in time.
	type term struct {
		at    string
		epoch int
		who   string
	}
	var terms []term
	for id, p := range h.procs {
		for _, m := range leadingRE.FindAllStringSubmatch(p.log.String(), -1) {
			e, _ := strconv.Atoi(m[2])
			terms = append(terms, term{m[1], e, id})
		}
	}
	sort.Slice(terms, func(i, j int) bool { return terms[i].epoch < terms[j].epoch })
	for i := 1; i < len(terms); i++ {
		if terms[i].epoch == terms[i-1].epoch || terms[i].at < terms[i-1].at {
			t.Errorf("epochs out of order: %+v then %+v", terms[i-1], terms[i])
		}
	}
	if len(terms) < 2 {
		t.Errorf("only %d scheduler terms seen; killing the scheduler should start another", len(terms))
	}
	t.Logf("scheduler terms: %v", fmt.Sprint(terms))
}

// Ctrl-C (SIGINT) stops a worker gracefully: it exits 0 and leaves nothing
// in flight, so no URL waits for a lease to expire.
func TestSIGINTStopsGracefully(t *testing.T) {
	h, _, _ := setup(t, testsite.Config{Hosts: 2, Pages: 200, Latency: 30 * time.Millisecond, ListenBase: "127.0.0.20"},
		"--rate", "20", "--burst", "2")
	p := h.startWorker("w1")
	h.waitFor("some pages", func(st status) bool { return st.Counters["pages"] >= 20 })
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("worker exited with %v after SIGINT\n%s", err, p.log.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("worker did not stop within a minute of SIGINT")
	}
	var st struct {
		Frontier struct {
			InFlight int64 `json:"in_flight"`
		} `json:"frontier"`
		Leader *struct{ ID string } `json:"leader"`
	}
	if err := json.Unmarshal(h.run("status", "--json"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Frontier.InFlight != 0 || st.Leader != nil {
		t.Fatalf("after a graceful stop: %d in flight, leader %+v; want none and none", st.Frontier.InFlight, st.Leader)
	}
}

// A worker started before the site is up finds robots.txt unreachable:
// RFC 9309 says "not now", so the hosts' URLs wait (a back-off shared
// through Redis) and every one is fetched once the site answers; none is
// recorded as disallowed but the site's own /private/ pages.
func TestSiteUpAfterTheWorker(t *testing.T) {
	s := redistest.Real(t)
	const base = "127.0.0.30"
	l, err := net.Listen("tcp", base+":0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // the site will listen here, once the worker has found it down
	cfg := testsite.Config{Hosts: 2, Pages: 50, ListenBase: base, Port: port}
	h := &harness{t: t, bin: build(t), redis: s.URL(), procs: map[string]*proc{}}
	roots := []string{fmt.Sprintf("http://127.0.0.30:%d/", port), fmt.Sprintf("http://127.0.0.31:%d/", port)}
	h.run(append([]string{"seed", "--allow-private", "--rate", "50", "--burst", "5"}, roots...)...)
	p := h.startWorker("w1")

	// The event: the worker tried each host's robots.txt and found no answer.
	for _, r := range roots {
		u, _ := url.Parse(r)
		fr, err := frontier.New(s.Client, "e2e", frontier.Options{Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		key := fr.RobotsKey(u.Scheme, u.Host)
		deadline := time.Now().Add(time.Minute)
		for s.Client.HGet(context.Background(), key, "failures").Val() == "" {
			select {
			case err := <-p.done:
				t.Fatalf("the worker exited (%v) before the site was up: its URLs were dropped\n%s", err, p.log.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("the worker never tried %s's robots.txt\n%s", u.Host, p.log.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	site, err := testsite.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("worker: %v\n%s", err, p.log.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("worker did not finish\n%s", p.log.String())
	}
	requireTruth(t, site)
	sc := bufio.NewScanner(bytes.NewReader(h.run("export")))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec struct{ URL, Error string }
		json.Unmarshal(sc.Bytes(), &rec)
		if strings.Contains(rec.Error, "disallowed") && !strings.Contains(rec.URL, "/private/") {
			t.Errorf("record %s: %s", rec.URL, rec.Error)
		}
	}
}

// Redis goes back in time: a SAVE at a quarter of the crawl, kill -9 at
// half, and a restart from that snapshot (as a restore from an older RDB,
// or a failover to a replica that lagged). Every truth URL is still
// fetched: each worker notices at its next exchange that Redis lost its
// writes and forgets the links it knew as seen.
func TestCrawlSurvivesRedisRollback(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	h, s, site := setup(t, testsite.Config{Hosts: 4, Pages: 500, Latency: 2 * time.Millisecond, ListenBase: "127.0.0.40"},
		"--rate", "40", "--burst", "4")
	for _, id := range []string{"w1", "w2", "w3"} {
		h.startWorker(id)
	}
	truth := len(site.Truth())
	st := h.waitFor("a quarter of the pages", func(st status) bool { return st.Counters["pages"] >= int64(truth/4) })
	if err := s.Client.Save(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SAVE at %d pages", st.Counters["pages"])
	st = h.waitFor("half of the pages", func(st status) bool { return st.Counters["pages"] >= int64(truth/2) })
	s.Crash(t)
	s.Restart(t)
	t.Logf("kill -9 Redis at %d pages; restarted from the snapshot", st.Counters["pages"])

	for id, p := range h.procs {
		p.awaitCleanExit(t)
		if !strings.Contains(p.log.String(), "no longer holds this worker's past exchanges") {
			t.Errorf("worker %s never noticed the rollback\n%s", id, p.log.String())
		}
	}
	requireTruth(t, site)
	// The rollback undid the work between SAVE and the kill: those pages
	// are fetched once more, and no page more often than that.
	if over := site.Overfetched(1); len(over) > 0 {
		t.Errorf("URLs fetched more often than one rollback explains: %v", over)
	}
}

// reset of a running crawl is refused while its workers are alive; with
// --force the workers stop with the "crawl is gone" error and a non-zero
// exit, and no key of the crawl is left or comes back.
func TestResetOfARunningCrawl(t *testing.T) {
	h, s, _ := setup(t, testsite.Config{Hosts: 2, Pages: 300, Latency: 5 * time.Millisecond, ListenBase: "127.0.0.50"},
		"--rate", "10", "--burst", "1")
	w1, w2 := h.startWorker("w1"), h.startWorker("w2")
	h.waitFor("some pages and both workers", func(st status) bool { return st.Counters["pages"] >= 10 && len(st.Workers) == 2 })

	_, stderr, err := h.try("reset")
	if err == nil || !strings.Contains(stderr, "workers are alive") || !strings.Contains(stderr, "w1") || !strings.Contains(stderr, "--force") {
		t.Fatalf("reset of a running crawl: %v, %q; want a refusal naming the workers and --force", err, stderr)
	}
	out, stderr, err := h.try("reset", "--force")
	if err != nil || !strings.Contains(out, "after 2 workers stopped") {
		t.Fatalf("reset --force: %v, %q %q", err, out, stderr)
	}
	for _, p := range []*proc{w1, w2} {
		select {
		case err := <-p.done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(p.log.String(), "the crawl is gone from Redis") {
				t.Errorf("worker %s after reset --force: %v; want a non-zero exit saying the crawl is gone\n%s", p.id, err, p.log.String())
			}
		case <-time.After(time.Minute):
			t.Fatalf("worker %s still runs a minute after reset --force", p.id)
		}
	}
	// Both workers have exited: nothing is left that could write.
	if keys := s.Client.Keys(context.Background(), "*").Val(); len(keys) != 0 {
		t.Fatalf("keys of the reset crawl after its workers stopped: %v", keys)
	}
}

// Two workers archive the crawl in WARC files: every file reads back with
// the library's strict reader and every digest is right, and so with the
// Internet Archive's reader (and warcio.js where npm answers), there is one
// response record per request the site answered, and each exported
// record points at the response record of its URL, with its digest.
func TestCrawlArchivesInWARC(t *testing.T) {
	// PDFs kept too: every response the site sends is archived.
	h, _, site := setup(t, testsite.Config{Hosts: 2, Pages: 100, ListenBase: "127.0.0.60"}, "--rate", "inf",
		"--keep-types", "text/html,application/pdf")
	dir := t.TempDir()
	var ps []*proc
	for _, id := range []string{"w1", "w2"} {
		p := h.startWorker(id, "--warc-dir", dir, "--warc-max-size", "200KB")
		ps = append(ps, p)
	}
	for _, p := range ps {
		select {
		case err := <-p.done:
			if err != nil {
				t.Fatalf("worker %s: %v\n%s", p.id, err, p.log.String())
			}
		case <-time.After(3 * time.Minute):
			t.Fatalf("worker %s did not finish", p.id)
		}
	}
	requireTruth(t, site)

	files, at, bytesWritten := readWARCs(t, dir)
	responses := len(at)
	if want := site.Requests(); responses != want {
		t.Errorf("%d response records for %d requests the site answered", responses, want)
	}
	checkWithInternetArchive(t, files, func(file string, offset int64, uri, digest string) bool {
		got, ok := at[fmt.Sprintf("%s:%d", file, offset)]
		return ok && got.uri == uri && got.digest == digest
	}, responses)
	checkWithWarcio(t, files, func(file string, offset int64, uri, digest string) bool {
		got, ok := at[fmt.Sprintf("%s:%d", file, offset)]
		return ok && got.uri == uri && got.digest == "sha1:"+digest
	}, responses)
	sc := bufio.NewScanner(bytes.NewReader(h.run("export")))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	records := 0
	for sc.Scan() {
		var rec struct {
			URL           string
			Status        int
			PayloadDigest string `json:"payload_digest"`
			WARC          *struct {
				File   string
				Offset int64
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Status == 0 {
			continue // not fetched (disallowed, refused)
		}
		records++
		if rec.WARC == nil {
			t.Errorf("%s: no WARC location", rec.URL)
			continue
		}
		got, ok := at[fmt.Sprintf("%s:%d", rec.WARC.File, rec.WARC.Offset)]
		if !ok || got.uri != rec.URL || got.digest != rec.PayloadDigest {
			t.Errorf("%s: points at %+v, which holds %+v; digest %s", rec.URL, rec.WARC, got, rec.PayloadDigest)
		}
	}
	t.Logf("%d files, %d response records, %d fetched records exported, %d bytes of WARC (%d a response)",
		len(files), responses, records, bytesWritten, bytesWritten/int64(max(responses, 1)))
}

// checkWithWarcio has an independent reader, webrecorder's warcio.js (its
// path in $WARCIO; .ci/run installs it with npm), index the files: every
// response it finds must be one ours found, at the same place, with the
// same URL and payload digest.
func checkWithWarcio(t *testing.T, files []string, same func(file string, offset int64, uri, digest string) bool, responses int) {
	t.Helper()
	bin := os.Getenv("WARCIO")
	if bin == "" {
		if os.Getenv("CRAWLER_REQUIRE_WARCIO") == "1" {
			t.Fatal("WARCIO is not set, and CRAWLER_REQUIRE_WARCIO=1")
		}
		t.Log("no independent WARC reader ($WARCIO unset): skipping that check")
		return
	}
	out, err := exec.Command(bin, append([]string{"cdx-index"}, files...)...).Output()
	if err != nil {
		t.Fatalf("warcio cdx-index: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, line := range lines {
		fields := strings.SplitN(line, " ", 3)
		var e struct {
			URL, Digest, Filename string
			Offset                string
		}
		if len(fields) != 3 || json.Unmarshal([]byte(fields[2]), &e) != nil {
			t.Fatalf("warcio cdx-index line %q", line)
		}
		offset, _ := strconv.ParseInt(e.Offset, 10, 64)
		if !same(e.Filename, offset, e.URL, e.Digest) {
			t.Errorf("warcio sees %s at %s:%d with digest %s; ours does not", e.URL, e.Filename, offset, e.Digest)
		}
	}
	if len(lines) != responses {
		t.Errorf("warcio indexes %d records; ours read %d responses", len(lines), responses)
	}
}

// The crawl on a real 3-master Redis Cluster, addressed by its nodes: its
// frontier sharded over the masters (16 shards, seed's default on a
// cluster), each master holding a real share of the crawl's keys; every
// page once; and the crawl goes on after the master that holds the
// crawl's own slot is killed mid-crawl and comes back (with its data: the
// nodes keep an append-only file), the workers saying plainly meanwhile
// that Redis is unreachable.
func TestCrawlOnARedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	c := redistest.RealCluster(t, 3, "--appendonly", "yes", "--appendfsync", "always")
	site, err := testsite.Start(testsite.Config{Hosts: 4, Pages: 150, Latency: 2 * time.Millisecond, ListenBase: "127.0.0.70"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(site.Close)
	h := &harness{t: t, bin: build(t), redis: "redis://" + strings.Join(c.Addrs(), ","), procs: map[string]*proc{}}
	h.run(append([]string{"seed", "--allow-private", "--rate", "200", "--burst", "10"}, site.Roots()...)...)
	ctx := context.Background()
	home, err := c.Client.MasterForKey(ctx, keyspace.KeysFor("e2e").Config)
	if err != nil {
		t.Fatal(err)
	}
	var victim *redistest.Server
	for _, n := range c.Nodes {
		if n.Addr == home.Options().Addr {
			victim = n
		}
	}
	w1, w2 := h.startWorker("w1"), h.startWorker("w2")
	st := h.waitFor("a third of the pages", func(st status) bool { return st.Counters["pages"] >= int64(len(site.Truth())/3) })
	victim.Crash(t)
	t.Logf("killed the master %s holding the crawl's slot at %d pages", victim.Addr, st.Counters["pages"])
	// The workers say so: wait (bounded) for each to report the outage.
	deadline := time.Now().Add(time.Minute)
	for _, w := range []*proc{w1, w2} {
		for !strings.Contains(w.log.String(), "Redis at "+victim.Addr+" is unreachable") {
			if time.Now().After(deadline) {
				t.Fatalf("worker %s did not report the lost master %s:\n%s\nw1:\n%s\nw2:\n%s", w.id, victim.Addr, w.log.String(), w1.log.String(), w2.log.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	victim.Restart(t)
	c.AwaitOK(t)
	w1.awaitCleanExit(t)
	w2.awaitCleanExit(t)
	requireTruth(t, site)
	if over := site.Overfetched(1); len(over) > 0 {
		t.Errorf("URLs fetched more often than one lost master explains: %v", over)
	}
	// export reads every shard's stream: one record a page and skip.
	st = h.status()
	if n := int64(bytes.Count(h.run("export"), []byte("\n"))); n != st.Counters["records"] || n < int64(len(site.Truth())) {
		t.Errorf("export wrote %d records; the crawl counted %d, for %d truth URLs", n, st.Counters["records"], len(site.Truth()))
	}
	total, per := 0, map[string]int{}
	for _, n := range c.Nodes {
		keys := n.Client.Keys(ctx, "crawl*").Val()
		per[n.Addr], total = len(keys), total+len(keys)
	}
	for addr, n := range per {
		if n*10 < total {
			t.Errorf("master %s holds %d of the crawl's %d keys: not a real share (%v)", addr, n, total, per)
		}
	}
	t.Logf("the crawl's keys per master: %v", per)
}

// Behind Sentinel: workers addressed by redis-sentinel:// follow a
// failover. The master is killed mid-crawl; the sentinel promotes the
// replica; the workers carry on against it and the crawl completes, every
// page fetched (a write the replica had not received yet is what the
// rollback guard is for).
func TestCrawlFollowsASentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	master := redistest.Real(t)
	replica := redistest.Replica(t, master)
	sentinel := redistest.Sentinel(t, master, "crawlmaster")
	site, err := testsite.Start(testsite.Config{Hosts: 3, Pages: 150, Latency: 2 * time.Millisecond, ListenBase: "127.0.0.80"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(site.Close)
	h := &harness{t: t, bin: build(t), redis: "redis-sentinel://" + sentinel + "/crawlmaster", procs: map[string]*proc{}}
	h.run(append([]string{"seed", "--allow-private", "--rate", "100", "--burst", "5"}, site.Roots()...)...)
	w1, w2 := h.startWorker("w1"), h.startWorker("w2")
	st := h.waitFor("a third of the pages", func(st status) bool { return st.Counters["pages"] >= int64(len(site.Truth())/3) })
	master.Crash(t)
	t.Logf("killed the master %s at %d pages", master.Addr, st.Counters["pages"])
	// The event: the replica becomes a master (bounded wait; Sentinel has no push to a test).
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(replica.Client.Info(context.Background(), "replication").Val(), "role:master") {
		if time.Now().After(deadline) {
			t.Fatal("the sentinel never promoted the replica")
		}
		time.Sleep(100 * time.Millisecond)
	}
	w1.awaitCleanExit(t)
	w2.awaitCleanExit(t)
	requireTruth(t, site)
	if over := site.Overfetched(1); len(over) > 0 {
		t.Errorf("URLs fetched more often than one failover explains: %v", over)
	}
}

// A worker stopped (SIGSTOP) past its lease and then continued fetches
// none of the URLs whose leases lapsed meanwhile — another worker has
// them — and records none of them: across the workers' --out files each
// URL has one record, as on the stream, and nothing of the site is missing.
// (Before: the URLs it had buffered were fetched again and written to its
// --out file although Redis refused them.)
func TestAWorkerStoppedPastItsLeaseFetchesNothingItLost(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	// No rate limit: a worker then holds many leases at once (in flight
	// and buffered), as a busy crawl's does.
	h, _, site := setup(t, testsite.Config{Hosts: 4, Pages: 1000, Latency: 50 * time.Millisecond, ListenBase: "127.0.0.10"},
		"--rate", "inf")
	dir := t.TempDir()
	for _, id := range []string{"w1", "w2"} {
		h.startWorker(id, "--out", filepath.Join(dir, id+".jsonl"))
	}
	st := h.waitFor("some pages and a leader", func(st status) bool { return st.Counters["pages"] >= 200 && st.Leader != nil })
	if st.Leader.ID != "w1" && st.Leader.ID != "w2" {
		t.Fatalf("the leader is %q", st.Leader.ID)
	}
	victim := "w1"
	if st.Leader.ID == victim {
		victim = "w2"
	}
	p := h.procs[victim]
	p.cmd.Process.Signal(syscall.SIGSTOP)
	stoppedAt := st.Counters["pages"]
	// Until its registration has lapsed (a lease: 10 s) and the others
	// have gone on past the URLs it held.
	stoppedTime := time.Now()
	// Until its leases have lapsed and the scheduler (the other worker)
	// has swept them back to the queue: before that, a heartbeat on
	// waking would still find them held, and rightly keep them.
	leader := h.procs[st.Leader.ID]
	h.waitFor("the stopped worker's leases swept back", func(status) bool {
		return strings.Contains(leader.log.String(), "expired leases back on the queue")
	})
	p.cmd.Process.Signal(syscall.SIGCONT)
	t.Logf("SIGSTOPped %s at %d pages, continued it %.1f s later, once its leases were swept back", victim, stoppedAt, time.Since(stoppedTime).Seconds())
	for _, p := range h.procs {
		p.awaitCleanExit(t)
	}
	requireTruth(t, site)
	// It woke to leases that had lapsed: those of URLs it had buffered it
	// hands back unfetched ("lease lapsed"), those of fetches under way
	// Redis refuses at their exchange. Which it holds at the stop is the
	// moment's (its buffer may be empty, every URL in a fetch); the
	// in-process TestAWorkerBackAfterItsLeasesLapsedFetchesNothingItLost
	// makes each happen for sure. What holds either way is checked below.
	log := p.log.String()
	if !strings.Contains(log, "lease lapsed") && !strings.Contains(log, "Redis refused its outcome") {
		t.Errorf("the stopped worker met no lapsed lease; its log:\n%s", log[max(0, len(log)-3000):])
	}
	seen := map[string]string{}
	for _, id := range []string{"w1", "w2"} {
		data, err := os.ReadFile(filepath.Join(dir, id+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var rec struct{ URL string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("%s: %q: %v", id, line, err)
			}
			if other, dup := seen[rec.URL]; dup {
				t.Errorf("%s is in the --out of %s and of %s", rec.URL, other, id)
			}
			seen[rec.URL] = id
		}
	}
	final := h.status()
	if int64(len(seen)) != final.Counters["records"] {
		t.Errorf("%d URLs in the --out files, %d records on the stream; want the same", len(seen), final.Counters["records"])
	}
	ss := site.Stats()
	t.Logf("%d URLs requested more than their one (flaky: two) request, %d extra requests in all; lapsed leases logged: %d",
		len(site.Overfetched(0)), ss.Extra(), strings.Count(log, "lease lapsed"))
	if over := site.Overfetched(1); len(over) > 0 {
		t.Errorf("URLs fetched more often than one stop explains: %v", over)
	}
}
