package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/testsite"
)

// pages/s looks back over the window, not over the whole crawl.
func TestRateFollowsTheWindow(t *testing.T) {
	t0 := time.Unix(0, 0)
	var samples []sample
	for i := range 30 { // 100 pages/s for 10 s, then 10 pages/s for 20 s
		pages := int64(i) * 100
		if i > 10 {
			pages = 1000 + int64(i-10)*10
		}
		samples = append(samples, sample{t0.Add(time.Duration(i) * time.Second), pages})
	}
	r, kept := rate(samples)
	if r != 10 {
		t.Fatalf("rate %v over %d samples; want 10 (the last 10 s)", r, len(kept))
	}
	if r, _ := rate(samples[:1]); r != 0 {
		t.Fatalf("rate of one sample %v; want 0", r)
	}
}

func TestProgressLine(t *testing.T) {
	p := crawl.Progress{Frontier: frontier.Sizes{Queued: 900, InFlight: 100, Deferred: 0},
		Counters: map[string]int64{"pages": 1234, crawl.OutcomeFailed: 3, crawl.OutcomeHTTPError: 4}}
	got := progressLine(p, 50)
	want := "1234 pages (7 errors) · 50.0/s · 900 queued · 100 in flight · queue drains in ~20s"
	if got != want {
		t.Fatalf("progress line\n%q\nwant\n%q", got, want)
	}
	if _, ok := drainTime(p, 0); ok {
		t.Fatal("a drain time at 0 pages/s")
	}
}

// Off a terminal, work logs its progress every --progress-every; with
// --log-format json every line is a JSON object with a dated time and a
// level, and a failed page has a warn line of its own.
func TestJSONLogsProgressAndFailedPages(t *testing.T) {
	site, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 20, Latency: 20 * time.Millisecond, ListenBase: "127.0.0.81"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	t.Chdir(t.TempDir())
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		http.Error(w, "down", http.StatusInternalServerError) // fails at once, with --max-attempts 1
	}))
	defer broken.Close()
	dead := broken.URL + "/"
	_, errOut, err := run(t, append([]string{"--log-format", "json", "crawl", "--allow-private", "--rate", "inf", "-c", "1",
		"--max-attempts", "1", "--progress-every", "50ms", dead}, site.Roots()...)...)
	if err != nil {
		t.Fatal(err)
	}
	msgs := map[string]int{}
	var failedLine map[string]any
	sc := bufio.NewScanner(strings.NewReader(errOut))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			continue // the status printed at the end
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		ts, _ := m["time"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || m["level"] == nil {
			t.Fatalf("log line %q: want a dated time and a level", line)
		}
		msg, _ := m["msg"].(string)
		msgs[msg]++
		if msg == "page failed" {
			failedLine = m
		}
	}
	if msgs["progress"] == 0 || msgs["worker exits"] != 1 || msgs[crawl.LogLeading] != 1 {
		t.Fatalf("log messages %v; want progress lines, one leading, one exit\n%s", msgs, errOut)
	}
	if failedLine == nil || failedLine["level"] != "WARN" || failedLine["url"] != dead || failedLine["err"] == "" {
		t.Fatalf("failed page line %v; want a warn line naming %s and its error", failedLine, dead)
	}
}

func TestBadLogFlagsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--log-format", "xml", "status"}, {"status", "--log-level", "loud"}} {
		if _, _, err := run(t, args...); !isUsage(err) || !strings.Contains(err.Error(), "--log-") {
			t.Errorf("%v: %v; want a usage error naming the flag", args, err)
		}
	}
}

// status --watch --json prints one object a line and returns once the
// crawl is done; the busiest hosts and the HTTP statuses are in it.
func TestStatusWatchEndsWithTheCrawl(t *testing.T) {
	site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 20, ListenBase: "127.0.0.82"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	mr := miniredis.RunT(t)
	redisURL := "redis://" + mr.Addr() + "/0"
	if _, _, err := run(t, append([]string{"--redis", redisURL, "seed", "--allow-private", "--rate", "inf"}, site.Roots()...)...); err != nil {
		t.Fatal(err)
	}
	// Before any worker: both hosts queued, due now.
	out, _, err := run(t, "--redis", redisURL, "status", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var before status.Status
	if err := json.Unmarshal([]byte(out), &before); err != nil {
		t.Fatal(err)
	}
	if before.HostsQueued != 2 || len(before.TopHosts) != 2 || before.TopHosts[0].Queued != 1 {
		t.Fatalf("status before the crawl: %d hosts queued, top %+v; want both seeds' hosts", before.HostsQueued, before.TopHosts)
	}
	if _, _, err := run(t, "--redis", redisURL, "work", "--exit-when-done"); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "--redis", redisURL, "status", "--watch", "--json", "--interval", "100ms")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last status.Status
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || !last.Done {
		t.Fatalf("status --watch ended with %q (%v); want the done crawl's status", lines[len(lines)-1], err)
	}
	var byStatus int64
	for name, n := range last.Counters {
		if strings.HasPrefix(name, "status:") {
			byStatus += n
		}
	}
	if byStatus != last.Counters["pages"] || last.Counters["status:200"] == 0 {
		t.Fatalf("status counts %v; want them to add up to the %d pages", last.Counters, last.Counters["pages"])
	}
}
