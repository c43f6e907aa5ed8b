package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
)

// The history gives pages/s over the 10 s before each sample, starts
// again when the crawl does, and keeps HistoryKept.
func TestTheHistoryIsPagesPerSecondOverTenSeconds(t *testing.T) {
	var h history
	t0 := time.Unix(1000, 0)
	if !math.IsNaN(h.rate()) {
		t.Fatal("an empty history has a rate")
	}
	for i := 0; i <= 30; i++ { // 5 pages/s for 20 s, then 50/s
		pages := int64(5 * i)
		if i > 20 {
			pages = 100 + int64(50*(i-20))
		}
		h.add(t0.Add(time.Duration(i)*time.Second), pages)
	}
	if r := h.rate(); r != 50 {
		t.Errorf("rate now %v; want 50 (the last 10 s)", r)
	}
	pts := h.points()
	if len(pts) != 29 || pts[0][0] != float64(t0.Add(2*time.Second).UnixMilli()) || pts[0][1] != 5 || pts[28][1] != 50 {
		t.Errorf("points %v; want 29 from the third sample, 5/s rising to 50/s", pts)
	}
	h.add(t0.Add(31*time.Second), 3) // reset and seeded again
	if len(h.at) != 1 || !math.IsNaN(h.rate()) {
		t.Errorf("after a reset: %d samples, rate %v; want one and none", len(h.at), h.rate())
	}
	h.add(t0.Add(31*time.Second+HistoryKept+time.Second), 10)
	if len(h.at) != 1 {
		t.Errorf("%d samples kept past HistoryKept; want the newest only", len(h.at))
	}
}

// A stream's first state carries the history the server has, so that a
// page opened late starts with its chart; the states after it do not.
func TestAStreamStartsWithTheChartsHistory(t *testing.T) {
	s := redistest.Mini(t)
	ctx := context.Background()
	seed, _ := url.Parse("http://example.test/")
	if _, err := admin.Seed(ctx, s.Client, "d", settings.Default(), []*url.URL{seed}); err != nil {
		t.Fatal(err)
	}
	d := New(s.Client, Config{Crawl: "d", Every: 10 * time.Millisecond})
	now := time.Now()
	for i := 60; i > 0; i-- { // a minute of samples, as Run takes them
		d.rd.hist.add(now.Add(-time.Duration(i)*time.Second), 0)
	}
	srv := httptest.NewServer(d)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/api/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var states []State
	for len(states) < 2 && sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var st State
			if err := json.Unmarshal([]byte(line), &st); err != nil {
				t.Fatalf("state %s: %v", line, err)
			}
			states = append(states, st)
		}
	}
	if len(states) != 2 || len(states[0].History) < 50 || states[1].History != nil {
		t.Fatalf("history in the stream's states: %d points, then %v; want the minute's, then none", len(states[0].History), states[1].History)
	}
}
