package crawl_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A worker's heartbeats say what it did: status lists it with the pages
// it finished and the leases it holds (the dashboard's workers panel reads
// the same).
func TestStatusSaysWhatEachWorkersHeartbeatSaid(t *testing.T) {
	s := redistest.Real(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case r.URL.Path == "/":
			w.Header().Set("Content-Type", "text/html")
			for i := 0; i < 4; i++ {
				fmt.Fprintf(w, `<a href="/p/%d">p</a>`, i)
			}
		default: // held until the test has read the status
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html></html>"))
		}
	}))
	defer srv.Close()
	defer func() { // (a test that failed early lets the held pages go)
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	set := settings.Default()
	set.Rate, set.Burst, set.AllowPrivate = 1000, 10, true
	root, _ := url.Parse(srv.URL + "/")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.Seed(ctx, s.Client, "hb", set, []*url.URL{root}); err != nil {
		t.Fatal(err)
	}
	w, err := crawl.NewWorker(ctx, s.Client, "hb", fastOptions("w1"))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() { defer close(ran); w.Run(ctx) }()
	var st *status.Status
	for {
		if st, err = status.Read(ctx, s.Client, "hb"); err != nil {
			t.Fatal(err)
		}
		if len(st.WorkerNotes) == 1 && st.WorkerNotes[0].Pages >= 1 && st.WorkerNotes[0].Leases >= 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("status never showed w1's pages and leases: %+v", st.WorkerNotes)
		case <-time.After(50 * time.Millisecond):
		}
	}
	n := st.WorkerNotes[0]
	if n.ID != "w1" || !n.Alive || n.Beat < 0 || n.Beat > 2*time.Second {
		t.Errorf("w1's note %+v; want alive, a heartbeat within its lease", n)
	}
	line := fmt.Sprintf("w1 (%d pages, %d leases, last heartbeat", n.Pages, n.Leases)
	if !strings.Contains(st.String(), line) {
		t.Errorf("status text lacks %q:\n%s", line, st)
	}
	close(release) // the held pages go, and the crawl ends
	<-ran
	if st, err = status.Read(ctx, s.Client, "hb"); err != nil || len(st.WorkerNotes) != 0 || st.Counters["pages"] != 5 {
		t.Errorf("after the crawl: notes %+v, %d pages (%v); want w1 gone with its note, 5 pages", st.WorkerNotes, st.Counters["pages"], err)
	}
}
