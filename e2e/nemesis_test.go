package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/pace"
	"github.com/redis/go-redis/v9"
)

// The nemesis: faults at random on the compose cluster, from a printed
// seed, and a checker over everything the crawl left. Each fault of the
// other compose tests was written one at a time; here they come in a
// random schedule, one after another and on top of each other's effects
// (Jepsen's nemesis; etcd's robustness tests). The faults:
//
//   - SIGKILL of a worker, or of the scheduler (docker kill), started
//     again later under the same id (its registration lapsed first; its
//     WARC file left open is closed at its start);
//   - a worker paused past its lease (docker pause);
//   - a worker cut off from Redis ('coord' disconnected) past its lease;
//   - Redis restarted (append-only file on), or paused a few seconds;
//   - a worker added (--scale), or stopped gracefully and started again;
//   - a slow link: a worker's interfaces held to 256 kbit/s with up to
//     500 ms of queue (tc's token bucket filter, tbf, in its network
//     namespace, with nsenter, where the host has both; tbf rather than
//     netem's delay, which kernels without the sch_netem module lack).
//
// A worker's clock cannot be skewed here: libfaketime does not move a Go
// program's clock (Go reads the vDSO, not libc), and a container shares
// the host's kernel clock; the crawl's timing rests on Redis's TIME and
// on each process's monotonic clock, which no skew of wall time moves.
//
// The checker, once the crawl is done: every truth URL has exactly one
// record in Redis (the results stream, as export writes it) and exactly
// one across the workers' --out files; the site saw no host over rate +
// burst in any second; pages fetched again are within the crash bound
// (pace.CrashRefetches for each fault that can cost fetches); the fence's
// log holds no sweep of an older epoch after one of a newer; the page
// budget, set to every page the site has, is exact; every WARC file is
// closed and reads whole, and every record's WARC reference is a response
// of its URL.
//
// NEMESIS_SEED replays a schedule (a failing run prints its seed);
// NEMESIS_FOR sets how long faults go on (3m by default: CI's run; the
// long run of bench/README.md: NEMESIS_FOR=20m).
func TestComposeNemesis(t *testing.T) {
	requireEngine(t)
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("NEMESIS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("NEMESIS_SEED %q: %v", s, err)
		}
		seed = n
	}
	span := 3 * time.Minute
	if s := os.Getenv("NEMESIS_FOR"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("NEMESIS_FOR %q: %v", s, err)
		}
		span = d
	}
	t.Logf("nemesis seed %d for %v (NEMESIS_SEED=%d NEMESIS_FOR=%v replays this schedule)", seed, span, seed, span)
	defer func() {
		if t.Failed() {
			t.Logf("FAILED with nemesis seed %d: NEMESIS_SEED=%d NEMESIS_FOR=%v go test -run TestComposeNemesis ./e2e replays it", seed, seed, span)
		}
	}()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	// The budget: every page the site has; the rate: the crawl lasts about
	// the schedule's span (four hosts, a burst of 2).
	budget := composeSitePages(t)
	rate := max(0.5, float64(budget)/4/span.Seconds())
	const burst = 2
	p := upCompose(t, pickTool(t), composeConfig{seedFlags: []string{"--max-pages", strconv.Itoa(budget),
		"--rate", strconv.FormatFloat(rate, 'f', 2, 64), "--burst", strconv.Itoa(burst)}})
	n := &nemesis{t: t, p: p, rng: rng, done: map[string]int{}, down: map[string]bool{}}
	n.slowOK = n.canSlow()
	n.watchFence()
	p.midCrawl(20)
	end := time.Now().Add(span)
	for time.Now().Before(end) && !p.h.status().Done {
		n.step()
		n.gap(3*time.Second, 12*time.Second)
	}
	n.reviveAll()
	t.Logf("faults injected, by kind: %v", n.done)
	if code := n.results(10 * time.Minute); code != 0 {
		t.Fatalf("results exited %d; want 0 (the crawl done)", code)
	}
	n.reviveAll() // a worker killed late closes its WARC file at its start
	n.closeLeftOpen()
	n.check(budget, rate, burst)
}

type nemesis struct {
	t      *testing.T
	p      *project
	rng    *rand.Rand
	done   map[string]int  // faults injected, by kind
	down   map[string]bool // worker containers killed or stopped, to start again
	crash  int             // faults that may cost fetches made again (pace.CrashRefetches each)
	slowOK bool
	fence  []int64 // the fence's log, read as it goes (the stream is capped)
	lastID string
	redis  *redis.Client
}

// gap waits a random time in [lo, hi).
func (n *nemesis) gap(lo, hi time.Duration) {
	time.Sleep(lo + time.Duration(n.rng.Int64N(int64(hi-lo))))
}

// running are the worker containers up now, and the scheduler's.
func (n *nemesis) running() (up []string, leader string) {
	st := n.p.h.status()
	for _, c := range n.p.containers("worker") {
		if !n.down[c] && strings.TrimSpace(docker(n.t, "inspect", "-f", "{{.State.Running}}", c)) == "true" {
			up = append(up, c)
		}
	}
	if st.Leader != nil {
		for _, c := range up {
			if strings.HasPrefix(c, strings.Split(st.Leader.ID, ":")[0]) {
				leader = c
			}
		}
	}
	return up, leader
}

// step injects one fault, chosen at random.
func (n *nemesis) step() {
	up, leader := n.running()
	kinds := []string{"pause-redis", "restart-redis", "revive"}
	if len(up) >= 3 {
		kinds = append(kinds, "kill", "kill-scheduler", "pause", "disconnect", "stop")
	}
	if len(up) < 5 {
		kinds = append(kinds, "add")
	}
	if n.slowOK && len(up) > 0 {
		kinds = append(kinds, "slow")
	}
	kind := kinds[n.rng.IntN(len(kinds))]
	pick := func() string {
		if len(up) == 0 {
			return ""
		}
		return up[n.rng.IntN(len(up))]
	}
	c := pick()
	switch kind {
	case "kill", "kill-scheduler":
		if kind == "kill-scheduler" && leader != "" {
			c = leader
		}
		docker(n.t, "kill", c)
		n.down[c] = true
		n.crash++
	case "stop":
		docker(n.t, "stop", "-t", "45", c)
		n.down[c] = true
	case "revive":
		if !n.revive() {
			return
		}
	case "pause":
		docker(n.t, "pause", c)
		time.Sleep(15 * time.Second) // past the lease (10 s)
		docker(n.t, "unpause", c)
		n.crash++
	case "disconnect":
		network := n.p.name + "_coord"
		docker(n.t, "network", "disconnect", network, c)
		time.Sleep(15 * time.Second)
		docker(n.t, "network", "connect", "--alias", "worker", network, c)
		n.crash++
	case "restart-redis":
		docker(n.t, "restart", "-t", "5", n.p.containers("redis")[0])
		n.p.h.redis = "redis://" + n.p.port("redis", 6379, 1)
		n.redisClient(true)
	case "pause-redis":
		r := n.p.containers("redis")[0]
		docker(n.t, "pause", r)
		time.Sleep(time.Duration(1+n.rng.IntN(4)) * time.Second)
		docker(n.t, "unpause", r)
	case "add":
		n.p.compose("up", "-d", "--no-deps", "--no-recreate", "--scale", fmt.Sprintf("worker=%d", len(n.p.containers("worker"))+1), "worker")
	case "slow":
		pid := strings.TrimSpace(docker(n.t, "inspect", "-f", "{{.State.Pid}}", c))
		links, _ := exec.Command("nsenter", "-t", pid, "-n", "ip", "-o", "link", "show").Output()
		var slowed []string
		for _, line := range strings.Split(string(links), "\n") { // "2: eth0@if123: <…"
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			dev, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if dev == "lo" {
				continue
			}
			if out, err := exec.Command("nsenter", "-t", pid, "-n", "tc", "qdisc", "add", "dev", dev, "root", "tbf",
				"rate", "256kbit", "burst", "16kb", "latency", "500ms").CombinedOutput(); err != nil {
				n.t.Logf("slow link on %s %s: %v %s (left out)", short(c), dev, err, out)
				continue
			}
			slowed = append(slowed, dev)
		}
		if len(slowed) == 0 {
			return
		}
		time.Sleep(time.Duration(5+n.rng.IntN(10)) * time.Second)
		for _, dev := range slowed {
			exec.Command("nsenter", "-t", pid, "-n", "tc", "qdisc", "del", "dev", dev, "root").Run()
		}
	}
	n.done[kind]++
	n.t.Logf("%v: %s %s", time.Now().Format("15:04:05"), kind, short(c))
	n.readFence()
}

func short(c string) string { return c[:min(12, len(c))] }

// revive starts one container killed or stopped; false when none is. A
// container Compose removed meanwhile (--scale replaces an exited one) is
// passed over.
func (n *nemesis) revive() bool {
	for c := range n.down {
		delete(n.down, c)
		if out, err := exec.Command("docker", "start", c).CombinedOutput(); err != nil {
			if strings.Contains(string(out), "No such container") {
				continue
			}
			n.t.Fatalf("docker start %s: %v\n%s", c, err, out)
		}
		return true
	}
	return false
}

// closeLeftOpen: a worker killed and never started again (Compose removed
// its container) leaves its WARC file open; a worker that starts closes
// the files no live worker holds. One more is started, once the crawl is
// over, and exits at once, having closed them.
func (n *nemesis) closeLeftOpen() {
	open, _ := filepath.Glob(filepath.Join(n.p.out, "warc", "*.open"))
	if len(open) == 0 {
		return
	}
	before := map[string]bool{}
	for _, c := range strings.Fields(n.p.compose("ps", "-a", "-q", "worker")) {
		before[c] = true
	}
	n.p.compose("up", "-d", "--no-deps", "--no-recreate", "--scale", fmt.Sprintf("worker=%d", len(n.p.containers("worker"))+1), "worker")
	for _, c := range strings.Fields(n.p.compose("ps", "-a", "-q", "worker")) {
		if !before[c] {
			docker(n.t, "wait", c)
		}
	}
	n.t.Logf("%d WARC files left open by workers killed for good: one more worker started, to close them", len(open))
}

func (n *nemesis) reviveAll() {
	for n.revive() {
	}
}

// canSlow: nsenter and tc are on this host, and it may use them.
func (n *nemesis) canSlow() bool {
	for _, bin := range []string{"nsenter", "tc"} {
		if _, err := exec.LookPath(bin); err != nil {
			n.t.Logf("no %s on this host: no slow links in the schedule", bin)
			return false
		}
	}
	return os.Geteuid() == 0
}

func (n *nemesis) redisClient(fresh bool) *redis.Client {
	if n.redis == nil || fresh {
		if n.redis != nil {
			n.redis.Close()
		}
		n.redis = redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(strings.TrimSuffix(n.p.h.redis, "/0"), "redis://")})
		n.t.Cleanup(func() { n.redis.Close() })
	}
	return n.redis
}

// watchFence starts reading the fence's log.
func (n *nemesis) watchFence() { n.lastID = "0"; n.readFence() }

// readFence reads the sweeps the fence let through since the last read.
func (n *nemesis) readFence() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msgs, err := n.redisClient(false).XRangeN(ctx, "crawl:{"+composeCrawl+"}:sweeps", "("+n.lastID, "+", 100000).Result()
	if n.lastID == "0" {
		msgs, err = n.redisClient(false).XRange(ctx, "crawl:{"+composeCrawl+"}:sweeps", "-", "+").Result()
	}
	if err != nil {
		return // Redis away for now (a fault): read next time
	}
	for _, m := range msgs {
		e, _ := strconv.ParseInt(fmt.Sprint(m.Values["epoch"]), 10, 64)
		n.fence = append(n.fence, e)
		n.lastID = m.ID
	}
}

// check judges everything the crawl left.
func (n *nemesis) check(budget int, rate float64, burst int) {
	t, p := n.t, n.p
	n.readFence()
	truth := p.truth()
	st := p.stats()
	status := p.h.status()
	// Records: exactly one per truth URL in Redis (export), and across the
	// --out files.
	count := func(files ...string) (map[string]int, map[string]crawl.Record, int) {
		seen, recs, torn := map[string]int{}, map[string]crawl.Record{}, 0
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(fh)
			sc.Buffer(make([]byte, 1<<20), 16<<20)
			for sc.Scan() {
				var r crawl.Record
				if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
					torn++ // a line a kill -9 cut
					continue
				}
				seen[r.URL]++
				recs[r.URL] = r
			}
			fh.Close()
		}
		return seen, recs, torn
	}
	stream, streamRecs, _ := count(filepath.Join(p.out, "records.jsonl"))
	outs, _ := filepath.Glob(filepath.Join(p.out, "records-*.jsonl"))
	out, _, torn := count(outs...)
	bad := 0
	// (A worker killed between Redis taking its page and its --out file
	// taking the line leaves the record in Redis only: at most one there.)
	for _, u := range truth {
		if stream[u] != 1 || out[u] > 1 {
			if bad++; bad <= 10 {
				t.Errorf("%s: %d records in Redis, %d in the --out files; want one in Redis, at most one in the files", u, stream[u], out[u])
			}
		}
	}
	missingOut := 0
	for _, u := range truth {
		if out[u] == 0 {
			missingOut++
		}
	}
	// Politeness: no host over rate + burst in any second.
	most := 0
	for h, hs := range st.Hosts {
		most = max(most, hs.MaxPerSecond)
		if float64(hs.MaxPerSecond) > rate+float64(burst) {
			t.Errorf("%s got %d requests in a second; rate %v + burst %d", h, hs.MaxPerSecond, rate, burst)
		}
	}
	// Duplicates within the crash bound.
	bound := n.crash * pace.CrashRefetches(8)
	if extra := st.Extra(); extra > bound {
		t.Errorf("%d pages fetched again; the %d crash-like faults bound it at %d", extra, n.crash, bound)
	}
	// The fence: no sweep of an older epoch after one of a newer.
	for i := 1; i < len(n.fence); i++ {
		if n.fence[i] < n.fence[i-1] {
			t.Errorf("the fence let a sweep of epoch %d through after one of epoch %d (sweep %d of its log)", n.fence[i], n.fence[i-1], i)
		}
	}
	// The budget, exact.
	if got := status.Counters["pages"]; got != int64(budget) {
		t.Errorf("%d pages counted against a budget of %d (the site's every page)", got, budget)
	}
	// WARC: closed, whole; every reference real.
	_, at, _ := readWARCs(t, filepath.Join(p.out, "warc"))
	refs := 0
	for u, r := range streamRecs {
		if r.WARC == nil || r.WARC.Revisit != "" {
			continue
		}
		refs++
		got, ok := at[fmt.Sprintf("%s:%d", r.WARC.File, r.WARC.Offset)]
		if !ok || got.uri != u {
			t.Errorf("%s: its record points at %s:%d, where %v is", u, r.WARC.File, r.WARC.Offset, got)
		}
	}
	t.Logf("nemesis: %d faults (%v), %d crash-like; %d truth URLs, %d pages (budget %d); %d fetched again (bound %d); "+
		"busiest host %d/s (rate %.2f + burst %d); %d sweeps in the fence's log, epochs %v..%v; %d WARC references checked; %d torn --out lines, %d truth URLs in Redis only",
		sum(n.done), n.done, n.crash, len(truth), status.Counters["pages"], budget, st.Extra(), bound,
		most, rate, burst, len(n.fence), first(n.fence), last(n.fence), refs, torn, missingOut)
}

func sum(m map[string]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}

func first(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}

func last(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

// results waits for the 'results' service to exit (it may have already:
// the crawl can end before the schedule does) and returns its status.
func (n *nemesis) results(limit time.Duration) int {
	cs := strings.Fields(n.p.compose("ps", "-a", "-q", "results"))
	if len(cs) != 1 {
		n.t.Fatalf("results containers: %v", cs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "wait", cs[0]).Output()
	if err != nil {
		n.t.Fatalf("the crawl did not end within %v (docker wait: %v)", limit, err)
	}
	code, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return code
}
