package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redcrawl/crawler/internal/testsite"
)

// chromium finds Debian's headless browser; without it the test skips,
// unless CRAWLER_REQUIRE_CHROMIUM=1 (.ci/run) makes that a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CRAWLER_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no chromium on PATH; CRAWLER_REQUIRE_CHROMIUM=1 makes this a failure (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

var dashboardURLRE = regexp.MustCompile(`dashboard of crawl "[^"]+" at (http://\S+)`)

// The dashboard in a real browser, during a three-worker crawl: the page
// count it shows rises and agrees with status --json; when the scheduler's
// worker is killed, the page shows the new holder under a higher epoch,
// and its event log the handover. A screenshot is written for a person.
func TestTheDashboardInABrowserFollowsTheCrawlAndAHandover(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	browser := chromium(t)
	h, _, _ := setup(t, testsite.Config{Hosts: 3, Pages: 300, ListenBase: "127.0.0.76"}, "--rate", "8")
	for _, id := range []string{"w1", "w2", "w3"} {
		h.startWorker(id)
	}
	// With a token, as a dashboard beyond loopback must have: the page's
	// files load without it (the browser asks for them as the HTML names
	// them), its state only with it. The line printed names no secret.
	const token = "e2e-t0k3n"
	dash := exec.Command(h.bin, "--redis", h.redis, "--crawl", "e2e", "dashboard", "--listen", "127.0.0.1:0", "--token", token, "--control")
	stderr, err := dash.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dash.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dash.Process.Kill(); dash.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	m := dashboardURLRE.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("the dashboard said %q (%v); want its address", line, err)
	}
	if strings.Contains(line, token) || !strings.Contains(m[1], "?token=SECRET") {
		t.Fatalf("the dashboard said %q; want its address with ?token=SECRET, not the token", line)
	}
	page := strings.Replace(m[1], "SECRET", token, 1)

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1280, 900))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	number := func(sel string) int64 {
		n, _ := strconv.ParseInt(text(sel), 10, 64)
		return n
	}
	await := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("the page never showed %s", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// rows reads a table as its cells (innerText: a row a line, tabs
	// between cells), without its header.
	rows := func(sel string) [][]string {
		var out [][]string
		for i, line := range strings.Split(text(sel), "\n") {
			if i > 0 && line != "" {
				out = append(out, strings.Split(line, "\t"))
			}
		}
		return out
	}
	worker := func(id string) []string {
		for _, r := range rows("#worker-table") {
			if len(r) == 5 && strings.Fields(r[0])[0] == id {
				return r
			}
		}
		return nil
	}
	await("pages fetched", func() bool { return number("#pages") > 20 })
	// Each worker's row: alive, with pages its heartbeats said; each host's
	// bucket at the crawl's rate.
	await("three workers alive with their pages", func() bool {
		for _, id := range []string{"w1", "w2", "w3"} {
			if r := worker(id); r == nil || r[1] != "alive" || r[2] == "0" || !strings.HasSuffix(r[4], " ago") {
				return false
			}
		}
		return true
	})
	await("three hosts' buckets at 8/s", func() bool {
		hosts := text("#host-table")
		return strings.Count(hosts, "8.0/s") == 3 && strings.Count(hosts, " of 1") == 3
	})
	// The count agrees with status: the page's is no older than a state
	// read before it (it streams one a second) and no newer than one after.
	before := h.status().Counters["pages"]
	time.Sleep(2 * time.Second)
	shown := number("#pages")
	after := h.status().Counters["pages"]
	if shown < before || shown > after {
		t.Errorf("the page shows %d pages; status said %d before and %d after", shown, before, after)
	}
	await("the count rising", func() bool { return number("#pages") > shown })

	// The controls (--control): the crawl paused and resumed through the
	// page, which sends the token it was opened with (the refusals without
	// it, or from another origin: dashboard's control_test.go).
	click := func(sel string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
			t.Fatalf("clicking %s: %v", sel, err)
		}
	}
	await("the controls", func() bool { return strings.Contains(text("#mode"), "controls") })
	click("#pause-crawl")
	await("the crawl paused, by the page and by status", func() bool {
		return text("#state") == "paused" && h.status().Hold != nil && strings.Contains(text("#ctl-said"), "the crawl is paused")
	})
	if by := h.status().Hold.By; !strings.HasPrefix(by, "the dashboard (127.0.0.1)") {
		t.Errorf("the pause says it was made by %q; want the dashboard and its caller", by)
	}
	click("#resume-crawl")
	await("the crawl running again", func() bool { return text("#state") == "running" && h.status().Hold == nil })
	// A host picked from the table, paused, then resumed from the paused
	// hosts' table.
	await("the hosts as buttons", func() bool { return strings.Contains(text("#host-table"), ".") })
	click("#host-table button.pick")
	picked, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#ctl-host")))
	if err != nil || picked == "" {
		t.Fatalf("a host clicked in the table was not picked for the controls: %q, %v", picked, err)
	}
	click("#pause-host")
	await("the picked host paused", func() bool {
		return strings.Contains(text("#paused-table"), picked) && strings.Contains(text("#ctl-said"), "paused")
	})
	click("#paused-table button.clear")
	await("the picked host resumed", func() bool {
		return !strings.Contains(text("#paused-table"), picked) && strings.Contains(text("#ctl-said"), "pause lifted")
	})

	st := h.status()
	if st.Leader == nil {
		t.Fatal("no scheduler")
	}
	old := *st.Leader
	await("the scheduler", func() bool { return text("#leader-id") == old.ID })
	h.mu.Lock()
	victim := h.procs[old.ID]
	h.mu.Unlock()
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s, the scheduler under epoch %d, at %d pages", old.ID, old.Epoch, number("#pages"))
	await("a new holder under a higher epoch", func() bool {
		return text("#leader-id") != old.ID && text("#leader-id") != "none" && number("#epoch") > old.Epoch
	})
	holder, epoch := text("#leader-id"), number("#epoch")
	want := "epoch " + strconv.FormatInt(epoch, 10) + ": " + holder + " took the lock after " + old.ID + "'s lease ran out"
	await("the handover in the event log and the scheduler's timeline", func() bool {
		return strings.Contains(text("#events"), want) && strings.Contains(text("#timeline"), want)
	})
	// The killed worker's heartbeats stopped: its registration lapses a
	// lease after its last one.
	await("the killed worker lapsed", func() bool { r := worker(old.ID); return r != nil && r[1] == "lapsed" })
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(os.TempDir(), "redcrawl-dashboard-e2e.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("the page shows %s leading under epoch %d and %q; screenshot: %s (%d bytes)", holder, epoch, want, shot, len(png))
}
