package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/internal/testsite"
)

// The compose tests run the repository's docker-compose.yml, unchanged, on
// a Docker engine: each worker its own container on the 'coord' and 'web'
// networks, Redis and the test site in theirs. A test's own override file
// publishes Redis, the site and the workers' metrics on 127.0.0.1 only
// (random ports), so the test reads status, /_truth and /metrics over
// loopback, and may change the seed's flags. Each project has a name of
// its own and is removed with 'down -v' when the test ends.
//
// Without an engine they are skipped, unless CRAWLER_REQUIRE_DOCKER=1
// (.ci/run sets it), which makes that a failure.

const composeCrawl = "compose" // CRAWLER_CRAWL in docker-compose.yml

// composeTool is one Compose implementation: Debian's docker-compose
// (v1, Python) or the docker CLI plugin (v2).
type composeTool struct {
	name string
	argv []string
}

var (
	composeV1 = composeTool{"v1", []string{"docker-compose"}}
	composeV2 = composeTool{"v2", []string{"docker", "compose"}}
)

func (c composeTool) available() bool {
	cmd := exec.Command(c.argv[0], append(c.argv[1:], "version")...)
	return cmd.Run() == nil
}

var images struct {
	once sync.Once
	err  error
	out  []byte
}

// requireEngine skips (or in CI fails) the test without a Docker engine
// and builds the images once, with the repository's own script.
func requireEngine(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("compose crawl: skipped with -short")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("CRAWLER_REQUIRE_DOCKER") == "1" {
			t.Fatalf("no Docker engine answers ('docker info': %v), and CRAWLER_REQUIRE_DOCKER=1", err)
		}
		t.Skipf("no Docker engine answers ('docker info': %v)", err)
	}
	images.once.Do(func() {
		cmd := exec.Command("../docker/build-images.sh")
		cmd.Env = append(os.Environ(), "CRAWLER_IMAGE=redcrawl/crawler:local", "REDIS_IMAGE=redcrawl/redis:local")
		images.out, images.err = cmd.CombinedOutput()
	})
	if images.err != nil {
		t.Fatalf("docker/build-images.sh: %v\n%s", images.err, images.out)
	}
}

// pickTool is v2 where the plugin is installed (CI requires it), else v1.
func pickTool(t *testing.T) composeTool {
	t.Helper()
	if composeV2.available() {
		return composeV2
	}
	if os.Getenv("CRAWLER_REQUIRE_COMPOSE_V2") == "1" {
		t.Fatal("'docker compose' (v2) is not installed, and CRAWLER_REQUIRE_COMPOSE_V2=1")
	}
	if !composeV1.available() {
		t.Fatal("neither docker-compose nor 'docker compose' is installed")
	}
	return composeV1
}

// project is one running compose project of the test.
type project struct {
	t       *testing.T
	tool    composeTool
	name    string
	files   []string
	env     []string
	out     string // CRAWL_OUTPUT: the records and WARC files, on the host
	h       *harness
	site    string // http://127.0.0.1:PORT of the test site
	started time.Time
}

// composeConfig shapes a test's project: the seed's flags after the ones
// every crawl of the site needs.
type composeConfig struct {
	seedFlags []string
	files     []string // more of the repository's compose files, after docker-compose.yml
	publish   string   // more of the test's override, under services: (loopback ports)
	services  []string // the services 'up' starts (default: all)
}

// upCompose starts the project in the background and waits until its
// Redis, site and three workers are reachable.
func upCompose(t *testing.T, tool composeTool, cfg composeConfig) *project {
	t.Helper()
	dir := t.TempDir()
	p := &project{t: t, tool: tool, out: filepath.Join(dir, "out"),
		name: fmt.Sprintf("rce2e%s%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "")), time.Now().UnixNano()%100000)}
	if len(p.name) > 50 {
		p.name = p.name[len(p.name)-50:]
	}
	if err := os.MkdirAll(p.out, 0o755); err != nil {
		t.Fatal(err)
	}
	seed := append([]string{"seed", "--redis-wait", "1m", "--allow-private"}, cfg.seedFlags...)
	seed = append(seed, "http://a.site.test:8080/", "http://b.site.test:8080/", "http://c.site.test:8080/", "http://d.site.test:8080/")
	quoted, _ := json.Marshal(seed)
	override := filepath.Join(dir, "test.yml")
	if err := os.WriteFile(override, []byte(`# the test's view: loopback ports only
services:
  redis:
    ports: ["127.0.0.1::6379"]
  site:
    ports: ["127.0.0.1::8080"]
  seed:
    command: `+string(quoted)+`
  worker:
    ports: ["127.0.0.1::9090"]
`+cfg.publish), 0o644); err != nil {
		t.Fatal(err)
	}
	p.files = append(append([]string{"../docker-compose.yml"}, cfg.files...), override)
	p.env = append(os.Environ(), "REDIS_IMAGE=redcrawl/redis:local", "CRAWLER_IMAGE=redcrawl/crawler:local",
		"CRAWL_OUTPUT="+p.out, fmt.Sprintf("CRAWLER_USER=%d:%d", os.Getuid(), os.Getgid()))
	t.Cleanup(p.down)
	p.started = time.Now()
	p.compose(append([]string{"up", "-d"}, cfg.services...)...)
	p.h = &harness{t: t, bin: build(t), redis: "redis://" + p.port("redis", 6379, 1), crawl: composeCrawl, procs: map[string]*proc{}}
	p.site = "http://" + p.port("site", 8080, 1)
	return p
}

// compose runs the tool on the project and fails the test if it fails.
func (p *project) compose(args ...string) string {
	p.t.Helper()
	out, err := p.try(args...)
	if err != nil {
		p.t.Fatalf("%s %v: %v\n%s", p.tool.name, args, err, out)
	}
	return out
}

func (p *project) try(args ...string) (string, error) {
	argv := append(append([]string{}, p.tool.argv[1:]...), "-p", p.name)
	for _, f := range p.files {
		argv = append(argv, "-f", f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.tool.argv[0], append(argv, args...)...)
	cmd.Env = p.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// down removes the project's containers, networks and volumes; on a
// failed test it first prints the end of every container's log.
func (p *project) down() {
	if p.t.Failed() {
		if out, err := p.try("logs", "--no-color", "--tail", "40"); err == nil {
			p.t.Logf("the project's logs (last 40 lines a container):\n%s", out)
		}
	}
	if out, err := p.try("down", "-v", "--remove-orphans", "-t", "5"); err != nil {
		p.t.Errorf("%s down -v: %v\n%s", p.tool.name, err, out)
	}
}

// port is the loopback address a service's container (1-based index)
// publishes its port on.
func (p *project) port(service string, port, index int) string {
	p.t.Helper()
	addr := strings.TrimSpace(p.compose("port", "--index", strconv.Itoa(index), service, strconv.Itoa(port)))
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		p.t.Fatalf("%s:%d is published on %q, not on loopback", service, port, addr)
	}
	return addr
}

// containers are the ids of the service's containers, running or not.
func (p *project) containers(service string) []string {
	p.t.Helper()
	return strings.Fields(p.compose("ps", "-q", service))
}

// everContainers are the ids of the service's containers, exited ones
// too ('ps' of Compose v2 lists only running ones without --all).
func (p *project) everContainers(service string) []string {
	p.t.Helper()
	return strings.Fields(p.compose("ps", "-a", "-q", service))
}

// containerOf is the container running the worker with this id (its
// host name is the container's short id, the worker id host:pid).
func (p *project) containerOf(workerID string) string {
	p.t.Helper()
	host, _, _ := strings.Cut(workerID, ":")
	for _, c := range p.containers("worker") {
		if strings.HasPrefix(c, host) {
			return c
		}
	}
	p.t.Fatalf("no worker container for worker %q", workerID)
	return ""
}

// lines counts the lines of a file.
func lines(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// awaitResults waits for the 'results' service to exit and returns its
// exit status: 0 once the crawl is done and every worker has stopped.
func (p *project) awaitResults(limit time.Duration) int {
	p.t.Helper()
	cs := p.everContainers("results")
	if len(cs) != 1 {
		p.t.Fatalf("results containers: %v", cs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "wait", cs[0]).Output()
	if err != nil {
		p.t.Fatalf("the crawl did not end within %v (docker wait: %v)", limit, err)
	}
	code, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return code
}

// getJSON reads one of the test site's own endpoints.
func (p *project) getJSON(path string, v any) {
	p.t.Helper()
	resp, err := http.Get(p.site + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		p.t.Fatalf("%s: %v", path, err)
	}
}

func (p *project) stats() testsite.Stats {
	var st testsite.Stats
	p.getJSON("/_stats", &st)
	return st
}

func (p *project) truth() []string {
	var truth []string
	p.getJSON("/_truth", &truth)
	return truth
}

// metric reads one sample of a worker container's /metrics (0 if absent).
func (p *project) metric(container, name string) float64 {
	p.t.Helper()
	out := strings.TrimSpace(docker(p.t, "port", container, "9090/tcp"))
	addr := strings.Split(out, "\n")[0]
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// verdict is what a fault scenario is judged by, and what its closing
// log line reports.
type verdict struct {
	missing, extra, pages int
	recovered             time.Duration
}

// judge checks the ended crawl against the site: every truth URL fetched,
// nothing fetched more often than the faults explain, and records for all.
func (p *project) judge(crashes int) verdict {
	p.t.Helper()
	st := p.stats()
	truth := p.truth()
	missing := testsite.Missing(truth, st)
	for i, u := range missing {
		if i < 10 {
			p.t.Errorf("never fetched: %s", u)
		}
	}
	if over := st.Overfetched(crashes); len(over) > 0 {
		p.t.Errorf("URLs fetched more often than %d faults explain: %v", crashes, over)
	}
	if len(st.Disallowed) > 0 {
		p.t.Errorf("robots-disallowed URLs fetched: %v", st.Disallowed)
	}
	status := p.h.status()
	if !status.Done {
		p.t.Errorf("the crawl is not done after results exited: %+v", status)
	}
	return verdict{missing: len(missing), extra: st.Extra(), pages: int(status.Counters["pages"])}
}

// warcFiles checks the WARC files on the host: closed, distinctly named,
// each read whole by nlnwa/gowarc's strict reader with valid digests and
// by the Internet Archive's reader, record for record; it returns the
// files and their response records.
func warcFiles(t *testing.T, dir string) ([]string, int) {
	t.Helper()
	files, at, _ := readWARCs(t, dir)
	checkWithInternetArchive(t, files, func(file string, offset int64, uri, digest string) bool {
		got, ok := at[fmt.Sprintf("%s:%d", file, offset)]
		return ok && got.uri == uri && got.digest == digest
	}, len(at))
	sort.Strings(files)
	return files, len(at)
}

// The compose demo, as a user runs it: three workers in three containers
// crawl the test site's four named hosts to the end; status lists three
// live workers with distinct ids; the WARC files have distinct names; the
// records and WARC files are on the host; results exits 0. With each
// Compose implementation installed (v1 always; v2 in CI).
func TestComposeDemo(t *testing.T) {
	for _, tool := range []composeTool{composeV1, composeV2} {
		t.Run(tool.name, func(t *testing.T) {
			requireEngine(t)
			if !tool.available() {
				if tool.name == "v2" && os.Getenv("CRAWLER_REQUIRE_COMPOSE_V2") == "1" {
					t.Fatal("'docker compose' (v2) is not installed, and CRAWLER_REQUIRE_COMPOSE_V2=1")
				}
				t.Skipf("%v is not installed", tool.argv)
			}
			p := upCompose(t, tool, composeConfig{seedFlags: []string{"--rate", "20", "--burst", "2"}})
			st := p.h.waitFor("three live workers", func(st status) bool { return len(st.Workers) == 3 })
			ids := map[string]bool{}
			for _, id := range st.Workers {
				ids[id] = true
			}
			if len(ids) != 3 {
				t.Fatalf("status lists workers %v: want 3 distinct ids", st.Workers)
			}
			for _, c := range p.containers("worker") {
				if got := p.metric(c, "redcrawl_is_leader"); got != 0 && got != 1 {
					t.Errorf("worker %s: redcrawl_is_leader %v", c[:12], got)
				}
			}
			if code := p.awaitResults(5 * time.Minute); code != 0 {
				t.Fatalf("results exited %d; want 0 (the crawl done)", code)
			}
			v := p.judge(0)
			files, responses := warcFiles(t, filepath.Join(p.out, "warc"))
			if len(files) != 3 {
				t.Errorf("WARC files %v: want one a worker", files)
			}
			for _, f := range files {
				owner := false
				for id := range ids {
					owner = owner || strings.HasSuffix(f, "-"+strings.ReplaceAll(id, ":", "-")+".warc.gz")
				}
				if !owner {
					t.Errorf("WARC file %s is named after no worker of %v", filepath.Base(f), st.Workers)
				}
			}
			records, err := os.ReadFile(filepath.Join(p.out, "records.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			final := p.h.status()
			if n := int64(bytes.Count(records, []byte("\n"))); n != final.Counters["records"] || n == 0 {
				t.Errorf("records.jsonl on the host has %d records; the crawl counted %d", n, final.Counters["records"])
			}
			perWorker := 0
			for id := range ids {
				b, err := os.ReadFile(filepath.Join(p.out, "records-"+strings.ReplaceAll(id, ":", "-")+".jsonl"))
				if err != nil {
					t.Errorf("worker %s's records file: %v", id, err)
				}
				perWorker += bytes.Count(b, []byte("\n"))
			}
			if int64(perWorker) != final.Counters["records"] {
				t.Errorf("the workers' records files hold %d records; the crawl counted %d", perWorker, final.Counters["records"])
			}
			if requests := p.archivable(); responses != requests {
				t.Errorf("%d WARC response records for %d requests the site answered (files aside)", responses, requests)
			}
			packDemo(t, p.h, filepath.Join(p.out, "warc"), files, responses)
			t.Logf("compose %s: %d pages, %d missing, %d extra fetches, %d records, %d WARC files (%d responses), %v from up to exit",
				tool.name, v.pages, v.missing, v.extra, final.Counters["records"], len(files), responses, time.Since(p.started).Round(time.Second))
		})
	}
}

// archivable is how many responses of the site's the crawl archives:
// every one but the files' (PDF), whose type the crawl does not keep
// (--keep-types).
func (p *project) archivable() int {
	p.t.Helper()
	site := p.stats()
	requests := 0
	for _, u := range site.Fetched {
		if !strings.Contains(u, "/files/") {
			requests += max(site.Repeated[u], 1)
		}
	}
	return requests
}

// faultSeed: 4 hosts × 500 pages at 10 requests a second per host, so the
// crawl lasts about a minute and each fault lands in the middle of it.
var faultSeed = []string{"--rate", "10", "--burst", "1"}

// midCrawl waits until 1/part of the site's truth is fetched, with three
// workers alive and a scheduler elected.
func (p *project) midCrawl(part int) status {
	p.t.Helper()
	truth := len(p.truth())
	return p.h.waitFor(fmt.Sprintf("1/%d of the pages, three workers and a leader", part), func(st status) bool {
		return st.Counters["pages"] >= int64(truth/part) && st.Leader != nil && len(st.Workers) == 3
	})
}

// bystander is a live worker that is not the scheduler.
func bystander(st status) string {
	if st.Workers[0] != st.Leader.ID {
		return st.Workers[0]
	}
	return st.Workers[1]
}

// awaitListed waits until the worker is listed alive (or, with alive
// false, no longer is).
func (p *project) awaitListed(id string, alive bool) {
	p.t.Helper()
	p.h.waitFor(fmt.Sprintf("worker %s listed alive: %v", id, alive), func(st status) bool {
		for _, w := range st.Workers {
			if w == id {
				return alive
			}
		}
		return !alive
	})
}

// finish waits for the crawl's end, judges it against the site (crashes:
// how many extra fetches of one URL the fault explains) and reports the
// scenario's figures in one line the closing note quotes.
func (p *project) finish(scenario string, crashes int, recovered time.Duration) verdict {
	p.t.Helper()
	if code := p.awaitResults(5 * time.Minute); code != 0 {
		p.t.Fatalf("results exited %d; want 0 (the crawl done)", code)
	}
	v := p.judge(crashes)
	v.recovered = recovered
	p.t.Logf("%s: %d pages, %d truth URLs missing, %d extra fetches, recovered in %v",
		scenario, v.pages, v.missing, v.extra, v.recovered.Round(100*time.Millisecond))
	return v
}

// A worker's container killed (SIGKILL) mid-crawl: its leased URLs come
// back when their leases expire, and the others crawl them. Recovered:
// when its registration lapsed, with its leases.
func TestComposeWorkerKilled(t *testing.T) {
	requireEngine(t)
	t.Parallel()
	p := upCompose(t, pickTool(t), composeConfig{seedFlags: faultSeed})
	st := p.midCrawl(3)
	victim := bystander(st)
	killed := time.Now()
	docker(t, "kill", p.containerOf(victim))
	t.Logf("killed worker %s's container at %d pages", victim, st.Counters["pages"])
	p.awaitListed(victim, false)
	p.finish("docker kill of a worker", 1, time.Since(killed))
}

// The whole crawl paused mid-way ('crawler pause', from the host, against
// the cluster's Redis): once the pages in flight at the pause are done,
// the test site sees no request for 10 s while status says paused and by
// whom, and the three --exit-when-done workers stay alive; resumed, the
// crawl finishes with every truth URL and no URL fetched twice.
func TestComposePausedAndResumed(t *testing.T) {
	requireEngine(t)
	t.Parallel()
	p := upCompose(t, pickTool(t), composeConfig{seedFlags: faultSeed})
	p.midCrawl(3)
	p.h.run("pause", "--by", "e2e")
	st := p.h.waitFor("the pause held and nothing in flight", func(st status) bool {
		return st.Hold != nil && st.Frontier.InFlight == 0
	})
	if st.Hold.By != "e2e" {
		t.Errorf("status says paused by %q; want e2e", st.Hold.By)
	}
	requests := func() int {
		n := 0
		for _, h := range p.stats().Hosts {
			n += h.Requests
		}
		return n
	}
	before, at := requests(), st.Counters["pages"]
	time.Sleep(10 * time.Second) // the window in which the site must hear nothing
	if n := requests(); n != before {
		t.Errorf("%d requests reached the site in the 10 s the crawl was paused", n-before)
	}
	if st = p.h.status(); st.Hold == nil || len(st.Workers) != 3 || st.Done {
		t.Errorf("after 10 s paused: hold %v, workers %v, done %v; want still paused, three workers alive, not done", st.Hold, st.Workers, st.Done)
	}
	t.Logf("paused at %d pages: no request for 10 s, %d workers alive", at, len(st.Workers))
	p.h.run("resume", "--by", "e2e")
	p.finish("crawler pause for 10 s, then resume", 0, 0)
}

// The scheduler's container paused (SIGSTOP for every process in it) for
// twice the lock's TTL: another worker leads under a higher epoch; when it
// is unpaused, its late sweep is refused by the fence — in its log and in
// its metrics — and the crawl still fetches every page. Recovered: when
// another worker led.
//
// A pause that lands while a sweep is in flight lets that sweep finish
// (Redis ran it before the new epoch), and the woken scheduler then has no
// late write left to send: it logs its epoch's end, not a refusal. So the
// test pauses the new scheduler in turn, up to twice more, and needs one
// refusal. The crawl's rate leaves room for the three: each takes twice
// the lock's TTL and the wait for a new leader (about 30 s), so the site's
// four hosts are crawled slowly enough to last them all and a margin
// (at 8 requests a second a host the crawl ended during the third, and
// its scheduler's container with it).
func TestComposeSchedulerPaused(t *testing.T) {
	requireEngine(t)
	t.Parallel()
	const attempts = 3
	const hosts, lasts = 4, attempts*30 + 30 // seconds
	rate := float64(composeSitePages(t)) / (hosts * lasts)
	p := upCompose(t, pickTool(t), composeConfig{seedFlags: []string{"--rate", strconv.FormatFloat(rate, 'f', 2, 64), "--burst", "1"}})
	st := p.midCrawl(10)
	var recovered time.Duration
	for try := 1; ; try++ {
		old := *st.Leader
		c := p.containerOf(old.ID)
		paused := time.Now()
		docker(t, "pause", c)
		t.Logf("paused the scheduler %s (epoch %d) at %d pages", old.ID, old.Epoch, st.Counters["pages"])
		st = p.h.waitFor("another leader", func(st status) bool {
			return st.Leader != nil && st.Leader.ID != old.ID && st.Leader.Epoch > old.Epoch
		})
		if try == 1 {
			recovered = time.Since(paused)
		}
		t.Logf("%s leads under epoch %d, %v after the pause", st.Leader.ID, st.Leader.Epoch, time.Since(paused).Round(100*time.Millisecond))
		const ttl = 10 * time.Second // leader.DefaultConfig's
		time.Sleep(time.Until(paused.Add(2 * ttl)))
		since := time.Now().UTC().Format(time.RFC3339Nano)
		docker(t, "unpause", c)
		if p.awaitEpochEnd(c, since) {
			if got := p.metric(c, "redcrawl_scheduler_fenced_total"); got < 1 {
				t.Errorf("redcrawl_scheduler_fenced_total of the unpaused scheduler = %v; want at least 1", got)
			}
			// The paused workers' pages in flight were fetched again by others.
			p.finish("docker pause of the scheduler for 2×TTL", try, recovered)
			return
		}
		if try == attempts {
			t.Fatalf("none of %d unpaused schedulers logged %q: each pause landed during a sweep, or the late sweep was not sent", attempts, crawl.LogFenced)
		}
		t.Logf("pause %d landed while a sweep was in flight (%q, no refusal): pausing the new scheduler", try, crawl.LogEpochEnded)
	}
}

// awaitEpochEnd waits for the unpaused scheduler in container c to log the
// end of its leadership after since: true when the fence refused its late
// sweep, false when it ended with no sweep to send.
func (p *project) awaitEpochEnd(c, since string) bool {
	p.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		logs := docker(p.t, "logs", "--since", since, c)
		switch {
		case strings.Contains(logs, crawl.LogFenced):
			return true
		case strings.Contains(logs, crawl.LogEpochEnded):
			return false
		case time.Now().After(deadline):
			p.t.Fatalf("the unpaused scheduler logged neither %q nor %q in a minute:\n%s", crawl.LogFenced, crawl.LogEpochEnded, docker(p.t, "logs", "--tail", "30", c))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A worker cut off from Redis (its 'coord' network disconnected) for 20 s,
// longer than a lease, while it still reaches the site: its leases go to
// others; reconnected, its late exchanges neither count a page twice nor
// overrun the page budget — set to exactly the pages the whole site has,
// so a page counted twice would leave a truth URL unfetched — and it
// carries on crawling. Recovered: from the reconnection until it is listed
// alive again.
func TestComposeWorkerCutOffFromRedis(t *testing.T) {
	requireEngine(t)
	t.Parallel()
	budget := composeSitePages(t)
	p := upCompose(t, pickTool(t), composeConfig{seedFlags: append([]string{"--max-pages", strconv.Itoa(budget)}, faultSeed...)})
	st := p.midCrawl(4)
	victim := bystander(st)
	c := p.containerOf(victim)
	network := p.name + "_coord"
	docker(t, "network", "disconnect", network, c)
	cut := time.Now()
	t.Logf("cut %s off from Redis at %d pages", victim, st.Counters["pages"])
	p.awaitListed(victim, false)
	time.Sleep(time.Until(cut.Add(20 * time.Second)))
	// Its records file grows only with exchanges Redis accepted (its
	// metrics port went with the network).
	records := filepath.Join(p.out, "records-"+strings.ReplaceAll(victim, ":", "-")+".jsonl")
	before := lines(t, records)
	docker(t, "network", "connect", "--alias", "worker", network, c)
	reconnected := time.Now()
	p.awaitListed(victim, true)
	// Whether it carries on crawling can be asked only of a crawl with
	// pages left for it: the others go on at the site's rate while it is
	// cut off, and on a quiet machine they may have fetched nearly all.
	left := int64(budget) - p.h.status().Counters["pages"]
	v := p.finish("docker network disconnect of a worker from Redis for 20 s", 1, time.Since(reconnected))
	switch after := lines(t, records); {
	case after > before:
		t.Logf("the reconnected worker recorded %d pages after it came back", after-before)
	case left >= 100:
		t.Errorf("the reconnected worker recorded no page after it came back (%d records before, %d after), with %d pages left", before, after, left)
	default:
		t.Logf("the reconnected worker recorded no page after it came back: %d pages were left then, for three workers", left)
	}
	if v.pages != budget {
		t.Errorf("the crawl counted %d pages against a budget of %d (the site's every page)", v.pages, budget)
	}
}

// Redis restarted mid-crawl (docker restart; append-only file on): the
// workers wait for it and carry on, nothing lost. Recovered: from the
// restart until 20 more pages are in.
func TestComposeRedisRestarted(t *testing.T) {
	requireEngine(t)
	t.Parallel()
	p := upCompose(t, pickTool(t), composeConfig{seedFlags: faultSeed})
	at := p.midCrawl(3).Counters["pages"]
	restarted := time.Now()
	docker(t, "restart", "-t", "5", p.containers("redis")[0])
	t.Logf("restarted Redis at %d pages", at)
	p.h.redis = "redis://" + p.port("redis", 6379, 1) // a restart may publish it anew
	p.h.waitFor("pages after the restart", func(st status) bool { return st.Counters["pages"] > at+20 })
	p.finish("docker restart of Redis", 1, time.Since(restarted))
}

// A fourth and a fifth worker added mid-crawl with --scale: they register,
// take work, and the crawl ends with every page once. Recovered: until
// five workers are listed alive.
func TestComposeWorkersAdded(t *testing.T) {
	requireEngine(t)
	t.Parallel()
	p := upCompose(t, pickTool(t), composeConfig{seedFlags: faultSeed})
	st := p.midCrawl(4)
	scaled := time.Now()
	p.compose("up", "-d", "--no-deps", "--no-recreate", "--scale", "worker=5", "worker")
	t.Logf("scaled to 5 workers at %d pages", st.Counters["pages"])
	five := p.h.waitFor("five live workers", func(st status) bool { return len(st.Workers) == 5 })
	p.finish("docker compose up --scale worker=5 mid-crawl", 0, time.Since(scaled))
	for _, id := range five.Workers {
		b, err := os.ReadFile(filepath.Join(p.out, "records-"+strings.ReplaceAll(id, ":", "-")+".jsonl"))
		if err != nil || len(b) == 0 {
			t.Errorf("worker %s wrote no records (%v)", id, err)
		}
	}
}

// composeSitePages is every page the compose file's test site has: a
// clean crawl fetches exactly these, so a page budget of that many is
// spent exactly when nothing was counted twice.
func composeSitePages(t *testing.T) int {
	t.Helper()
	site, err := testsite.Start(testsite.Config{Names: []string{"a.site.test", "b.site.test", "c.site.test", "d.site.test"},
		Pages: 500, Listen: "127.0.0.1:0", Port: 8080})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	return len(site.Fetchable())
}
