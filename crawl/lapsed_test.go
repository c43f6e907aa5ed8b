package crawl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/tcpproxy"
	"github.com/redis/go-redis/v9"
)

// frozenSite serves pages /p/0 … /p/(n-1), each linking to the next five,
// and counts requests per path; while frozen, every request waits.
type frozenSite struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    map[string]int
	frozen  chan struct{} // nil: serving; else closed to thaw
	waiting int           // requests held by the freeze
}

func newFrozenSite(n int) *frozenSite {
	s := &frozenSite{reqs: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.reqs[r.URL.Path]++
		frozen := s.frozen
		s.mu.Unlock()
		if frozen != nil {
			s.mu.Lock()
			s.waiting++
			s.mu.Unlock()
			select {
			case <-frozen:
			case <-r.Context().Done():
				return
			}
		}
		var i int
		fmt.Sscanf(r.URL.Path, "/p/%d", &i)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>page %d</title>", i)
		for j := i + 1; j <= i+5 && j < n; j++ {
			fmt.Fprintf(w, `<a href="/p/%d">%d</a> `, j, j)
		}
	}))
	return s
}

func (s *frozenSite) freeze() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen = make(chan struct{})
}

func (s *frozenSite) thaw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.frozen)
	s.frozen = nil
}

// A worker that comes back after its leases lapsed — its fetches hung and
// Redis out of reach (a paused proxy) past the lease, as a SIGSTOP or a
// frozen VM leaves it — fetches none of the URLs it had buffered (another
// worker got them), archives and records none of the pages it finished
// under leases Redis took back, and marks in its WARC what it had
// archived that the crawl gave to another worker. Only the fetches under
// way when it was cut off reach the site twice. Then the same, with the
// site answering again while Redis is still out of reach: the worker
// finishes and archives pages under leases that lapse before it can say
// so; Redis refuses them, and their WARC records are marked.
func TestAWorkerBackAfterItsLeasesLapsedFetchesNothingItLost(t *testing.T) {
	t.Run("fetches hung", func(t *testing.T) { workerBackAfterLapse(t, false) })
	t.Run("pages finished", func(t *testing.T) { workerBackAfterLapse(t, true) })
}

func workerBackAfterLapse(t *testing.T, thawEarly bool) {
	s := redistest.Real(t)
	site := newFrozenSite(300)
	defer site.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate = math.Inf(1), true
	seed, _ := url.Parse(site.URL + "/p/0")
	if _, err := admin.Seed(context.Background(), s.Client, "lapsed", set, []*url.URL{seed}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proxy := tcpproxy.Start(t, s.Addr)
	far := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1})
	defer far.Close()
	fc := fetch.DefaultConfig()
	fc.Timeout, fc.HeaderTimeout = 30*time.Second, 30*time.Second
	var logsA, logsB syncBuf
	var outA, outB syncBuf
	dirA, dirB := t.TempDir(), t.TempDir()
	a, b := fastOptions("a"), fastOptions("b")
	a.Fetch, b.Fetch = &fc, &fc
	a.Log, b.Log = slog.New(slog.NewTextHandler(&logsA, nil)), slog.New(slog.NewTextHandler(&logsB, nil))
	a.Out, b.Out = &outA, &outB
	a.WARC, b.WARC = &archive.Config{Dir: dirA}, &archive.Config{Dir: dirB}
	wa, err := crawl.NewWorker(ctx, far, "lapsed", a)
	if err != nil {
		t.Fatal(err)
	}
	doneA := make(chan error, 1)
	go func() { doneA <- wa.Run(ctx) }()
	for wa.Counters.OK.Load() < 20 {
		select {
		case err := <-doneA:
			t.Fatalf("worker a ended early: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	// a's fetches hang. Once every loop of a waits on one, a has sent all
	// it finished, and it holds more leases than it has loops (URLs wait
	// in its buffer), Redis goes out of its reach; b starts.
	site.freeze()
	sizes := frontierOf(t, s.Client, "lapsed", 1)
	for {
		sz, err := sizes.Sizes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := &wa.Counters
		finished := c.OK.Load() + c.HTTPError.Load() + c.Failed.Load() + c.Skipped.Load()
		site.mu.Lock()
		stuck := site.waiting
		site.mu.Unlock()
		if stuck == a.Concurrency && c.Sent.Load() == finished && sz.InFlight > int64(a.Concurrency) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("worker a never buffered a URL")
		case <-time.After(5 * time.Millisecond):
		}
	}
	proxy.Pause()
	if thawEarly {
		site.thaw()
	}
	wb, err := crawl.NewWorker(ctx, s.Client, "lapsed", b)
	if err != nil {
		t.Fatal(err)
	}
	doneB := make(chan error, 1)
	go func() { doneB <- wb.Run(ctx) }()
	for !strings.Contains(logsB.String(), "expired leases back on the queue") {
		select {
		case err := <-doneB:
			t.Fatalf("worker b ended early: %v", err)
		case <-ctx.Done():
			t.Fatal("a's leases were never reclaimed")
		case <-time.After(10 * time.Millisecond):
		}
	}
	site.mu.Lock()
	inFlight := 0 // requests under way at the cut: a's and b's
	for _, n := range site.reqs {
		inFlight += n
	}
	site.mu.Unlock()
	if !thawEarly {
		site.thaw()
	}
	proxy.Resume()
	for _, done := range []chan error{doneA, doneB} {
		if err := <-done; err != nil {
			t.Fatalf("a worker after the cut: %v", err)
		}
	}

	site.mu.Lock()
	var twice []string
	for p, n := range site.reqs {
		if n > 1 {
			twice = append(twice, p)
		}
	}
	got := len(site.reqs)
	site.mu.Unlock() // the workers are done: the counts no longer move
	if got != 300 {
		t.Fatalf("%d of 300 pages requested", got)
	}
	// What a fetched before its leases lapsed — pages finished but not yet
	// exchanged, and fetches under way — b fetches again (a could not tell
	// Redis in time); what a had buffered, b alone fetches.
	logged := func(msg string) map[string]bool {
		urls := map[string]bool{}
		for _, line := range strings.Split(logsA.String(), "\n") {
			if strings.Contains(line, msg) {
				if _, u, ok := strings.Cut(line, " url="); ok {
					urls[strings.TrimPrefix(strings.Fields(u)[0], site.URL)] = true
				}
			}
		}
		return urls
	}
	unfetched := logged("lease lapsed before the fetch")
	fetchedLate := logged("lease lapsed during the fetch")
	for u := range logged("Redis refused its outcome") {
		fetchedLate[u] = true
	}
	for _, p := range twice {
		if !fetchedLate[p] {
			t.Errorf("%s requested twice, though a did not fetch it before its lease lapsed", p)
		}
	}
	for p := range unfetched {
		// Once for the crawl; and once more if a had fetched it before its
		// lease lapsed (a page a finished whose outcome Redis refused can
		// come back to a under a lease granted by a call sent before the
		// cut: its local deadline has passed already, so a hands it back).
		want := 1
		if fetchedLate[p] {
			want = 2
		}
		if site.reqs[p] != want {
			t.Errorf("%s, whose lapsed lease a handed back unfetched, was requested %d times; want %d", p, site.reqs[p], want)
		}
	}
	// Its fetches under way lapse during the fetch, always; its buffered
	// URLs are handed back before the fetch when the pop that brought them
	// was answered before the cut (a pop whose reply the cut delayed past
	// the client's timeout never reaches the buffer: the sweep takes
	// those leases back all the same).
	if !thawEarly && wa.Counters.Lapsed.Load() == 0 {
		t.Errorf("worker a handed back no lapsed lease; log:\n%s", logsA.String())
	}
	if thawEarly && wa.Counters.Refused.Load() == 0 {
		t.Errorf("Redis refused none of a's finished pages; log:\n%s", logsA.String())
	}
	t.Logf("requests at the cut %d; requested twice %d; a: lapsed %d (%d before the fetch), refused %d",
		inFlight, len(twice), wa.Counters.Lapsed.Load(), len(unfetched), wa.Counters.Refused.Load())

	// Records: one a URL, across both workers' --out, as on the stream.
	seen := map[string]string{}
	for who, out := range map[string]*syncBuf{"a": &outA, "b": &outB} {
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if line == "" {
				continue // a worker may have recorded nothing: the other got every URL
			}
			var rec crawl.Record
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("--out of %s: %q: %v", who, line, err)
			}
			if other, dup := seen[rec.URL]; dup {
				t.Errorf("%s in the --out of %s and of %s", rec.URL, other, who)
			}
			seen[rec.URL] = who
		}
	}
	st, err := status.Read(ctx, s.Client, "lapsed")
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 300 || st.Counters["pages"] != 300 || st.Counters["records"] != 300 {
		t.Errorf("%d URLs in the --out files, Redis counts %d pages and %d records; want 300 each", len(seen), st.Counters["pages"], st.Counters["records"])
	}
	// WARC: one response a URL that no metadata record marks as a duplicate.
	responses := map[string][]string{} // URL → record ids
	marked := map[string]bool{}
	for _, dir := range []string{dirA, dirB} {
		eachWARCRecord(t, dir, func(rec gowarc.Record) {
			h := rec.WarcRecord.WarcHeader()
			switch rec.WarcRecord.Type() {
			case gowarc.Response:
				responses[h.Get(gowarc.WarcTargetURI)] = append(responses[h.Get(gowarc.WarcTargetURI)], h.GetId(gowarc.WarcRecordID))
			case gowarc.Metadata:
				var body bytes.Buffer
				if rb, err := rec.WarcRecord.Block().RawBytes(); err == nil {
					body.ReadFrom(rb)
				}
				if strings.Contains(body.String(), "redcrawl-duplicate: yes") {
					marked[h.GetId(gowarc.WarcRefersTo)] = true
				}
			}
		})
	}
	for u, ids := range responses {
		unmarked := 0
		for _, id := range ids {
			if !marked[id] {
				unmarked++
			}
		}
		if unmarked != 1 {
			t.Errorf("%s: %d WARC responses not marked as duplicates, of %d; want 1", u, unmarked, len(ids))
		}
	}
	if len(responses) != 300 {
		t.Errorf("WARC responses for %d URLs; want 300", len(responses))
	}
}

// A lease that lapses during its fetch (by the worker's clock, Redis still
// holding it) made a request all the same: its URL goes back as tried, and
// after its last try it ends with a record. Before, it went back unused:
// a URL whose lease lapsed at every fetch was fetched for ever, and one
// given back when a page budget ran out ended without a record although
// the site had seen it. Here the worker's clock jumps an hour each time
// /jump is requested; the crawl ends, /jump requested MaxAttempts times,
// its record saying why, and /a, whose lease a jump may lapse before its
// fetch, requested once. On both Redis kinds.
func TestALeaseLapsedDuringItsFetchCountsAsATry(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		var offset atomic.Int64 // the worker's clock, ahead of the wall's
		const attempts = 2
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var mu sync.Mutex
		reqs := map[string]int{}
		site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			reqs[r.URL.Path]++
			n := reqs[r.URL.Path]
			mu.Unlock()
			w.Header().Set("Content-Type", "text/html")
			switch r.URL.Path {
			case "/robots.txt":
				http.NotFound(w, r)
			case "/":
				fmt.Fprint(w, `<a href="/jump">j</a> <a href="/a">a</a>`)
			case "/jump":
				if n > attempts {
					cancel() // fetched past its tries: it went back unused
				}
				offset.Add(int64(time.Hour))
				fmt.Fprint(w, "<title>jump</title>")
			default:
				fmt.Fprint(w, "<title>a</title>")
			}
		}))
		defer site.Close()
		set := settings.Default()
		set.Rate, set.AllowPrivate = math.Inf(1), true
		seed, _ := url.Parse(site.URL + "/")
		if _, err := admin.Seed(context.Background(), s.Client, "lapse-try", set, []*url.URL{seed}); err != nil {
			t.Fatal(err)
		}
		o := fastOptions("w")
		o.MaxAttempts, o.Concurrency = attempts, 1 // one loop: /a is never in flight at a jump
		o.Lease = time.Minute                      // by Redis's clock, never lapsed
		o.Clock = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		w, err := crawl.NewWorker(ctx, s.Client, "lapse-try", o)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Run(ctx); err != nil || ctx.Err() != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("the crawl did not end (run: %v); requests %v", err, reqs)
		}
		recs := exportedByURL(t, ctx, s.Client, "lapse-try")
		jump, ok := recs[site.URL+"/jump"]
		if !ok || jump.Outcome != crawl.OutcomeFailed || jump.Attempt != attempts || !strings.Contains(jump.Error, "lease lapsed during the fetch") {
			t.Fatalf("/jump's record %+v (found %v); want failed after %d attempts, its lease's lapse said", jump, ok, attempts)
		}
		mu.Lock()
		defer mu.Unlock()
		if reqs["/jump"] != attempts || reqs["/a"] != 1 || len(recs) != 3 {
			t.Fatalf("requests %v, records %d; want /jump %d times, /a once, 3 records", reqs, len(recs), attempts)
		}
	})
}
