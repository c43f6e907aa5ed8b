package e2e

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/recrawl"
	"github.com/redcrawl/crawler/internal/testsite"
)

var pageNumberRE = regexp.MustCompile(`/p/(\d+)\.html$`)

// A continuous crawl (seed --revisit) of a site whose pages change at
// three rates (testsite's ChangeEvery: /p/N.html with N%10 == 0 every
// period, N%10 == 1 every fourth, the others never), run for a minute and
// a half: the schedule learns them, so that the pages that change
// most are fetched most often and the ones that never change least, their
// intervals apart; and the crawl never ends on its own.
func TestAContinuousCrawlLearnsHowOftenPagesChange(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	t.Parallel()
	const period = 2 * time.Second
	h, srv, site := setup(t, testsite.Config{Hosts: 1, Pages: 200, ChangeEvery: period, ListenBase: "127.0.0.72"},
		"--rate", "inf", "--revisit", "5s", "--revisit-min", "1s", "--revisit-max", "30s")
	w := h.startWorker("c1")
	const runFor = 90 * time.Second
	time.Sleep(runFor) // the crawl's own schedule is what is measured: it runs this long
	if st := h.status(); st.Done {
		t.Fatal("a continuous crawl ended on its own")
	}
	if err := w.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	w.awaitCleanExit(t)

	// Fetches by class, from the site's own counts.
	stats := site.Stats()
	class := func(u string) string {
		m := pageNumberRE.FindStringSubmatch(u)
		if m == nil {
			return ""
		}
		n, _ := strconv.Atoi(m[1])
		switch n % 10 {
		case 0:
			return "hot"
		case 1:
			return "warm"
		}
		return "cold"
	}
	fetches := map[string][]int{}
	for _, u := range stats.Fetched {
		if c := class(u); c != "" {
			fetches[c] = append(fetches[c], 1+stats.Repeated[u])
		}
	}
	// Intervals the schedule converged to, from the visits in Redis.
	intervals := map[string][]int64{}
	members, err := srv.Client.ZRange(context.Background(), keyspace.KeysFor("e2e").Due, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members { // "host\nelement\nvisit" (frontier/visit.go)
		parts := strings.SplitN(m, "\n", 3)
		if len(parts) != 3 {
			t.Fatalf("due set member %q", m)
		}
		_, path, _ := strings.Cut(parts[1], " ")
		visit := recrawl.Decode(parts[2])
		if c := class(path); c != "" && visit != nil {
			intervals[c] = append(intervals[c], visit.Interval)
		}
	}
	median := func(xs []int) float64 {
		if len(xs) == 0 {
			return 0
		}
		sort.Ints(xs)
		return float64(xs[len(xs)/2])
	}
	median64 := func(xs []int64) int64 {
		if len(xs) == 0 {
			return 0
		}
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		return xs[len(xs)/2]
	}
	var report []string
	for _, c := range []string{"hot", "warm", "cold"} {
		report = append(report, fmt.Sprintf("%s: %d pages, median %.0f fetches, median interval %ds (min %ds, max %ds)", c, len(fetches[c]),
			median(fetches[c]), median64(intervals[c]), minOf(intervals[c]), maxOf(intervals[c])))
	}
	t.Logf("continuous crawl for %v, pages changing every %v (hot), %v (warm), never (cold):\n  %s", runFor, period, 4*period, strings.Join(report, "\n  "))
	hot, warm, cold := median(fetches["hot"]), median(fetches["warm"]), median(fetches["cold"])
	if !(hot > warm && warm > cold) {
		t.Errorf("median fetches: hot %.0f, warm %.0f, cold %.0f; want the pages that change most fetched most", hot, warm, cold)
	}
	if ih, iw, ic := median64(intervals["hot"]), median64(intervals["warm"]), median64(intervals["cold"]); !(ih < iw && iw < ic) {
		t.Errorf("median intervals: hot %ds, warm %ds, cold %ds; want them in that order", ih, iw, ic)
	}
}

func minOf(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	m := xs[0]
	for _, x := range xs {
		m = min(m, x)
	}
	return m
}

func maxOf(xs []int64) int64 {
	m := int64(0)
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
