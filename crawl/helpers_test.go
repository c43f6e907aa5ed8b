package crawl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
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
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// frontierOf is crawl name's frontier of shards shards, to read it.
func frontierOf(t *testing.T, c redis.UniversalClient, name string, shards int) *frontier.Frontier {
	t.Helper()
	fr, err := frontier.New(c, name, frontier.Options{Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

// recordsByURL reads JSON lines of records (export's, --out's), failing
// the test on a line that is not one, by URL (the last of a URL wins).
func recordsByURL(t *testing.T, lines string) map[string]crawl.Record {
	t.Helper()
	out := map[string]crawl.Record{}
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var rec crawl.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out[rec.URL] = rec
	}
	return out
}

// exportedByURL exports crawl name's records and reads them by URL.
func exportedByURL(t *testing.T, ctx context.Context, c redis.UniversalClient, name string) map[string]crawl.Record {
	t.Helper()
	var exported bytes.Buffer
	if _, err := admin.Export(ctx, c, name, &exported, false); err != nil {
		t.Fatal(err)
	}
	return recordsByURL(t, exported.String())
}

// eachWARCRecord reads every .warc.gz file in dir with nlnwa/gowarc's
// strict reader, failing the test on a file or record it cannot read, and
// calls fn with each record (closed after fn returns).
func eachWARCRecord(t *testing.T, dir string, fn func(gowarc.Record)) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, file := range files {
		r, err := gowarc.NewWarcFileReader(file, 0, gowarc.WithStrictValidation())
		if err != nil {
			t.Fatal(err)
		}
		for rec, err := range r.Records() {
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			fn(rec)
			rec.Close()
		}
		r.Close()
	}
}

// pageSite is a one-host site for a crawl's timing: every path but
// /robots.txt is a page with no links, its requests counted and stamped;
// /robots.txt answers 404 after robotsDelay; onPage, when set, hears the
// n-th page request before it is answered.
type pageSite struct {
	*httptest.Server
	mu       sync.Mutex
	fetched  map[string]int
	arrivals []time.Time
	requests atomic.Int64
}

func newPageSite(t *testing.T, robotsDelay time.Duration, onPage func(n int64)) *pageSite {
	t.Helper()
	p := &pageSite{fetched: map[string]int{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			select {
			case <-time.After(robotsDelay):
			case <-r.Context().Done():
			}
			http.NotFound(w, r)
			return
		}
		if n := p.requests.Add(1); onPage != nil {
			onPage(n)
		}
		p.mu.Lock()
		p.arrivals = append(p.arrivals, time.Now())
		p.fetched[r.URL.Path]++
		p.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<p>a page</p>")
	}))
	t.Cleanup(p.Close)
	return p
}

// seeds are n pages of the site, /p/0 on.
func (p *pageSite) seeds(n int) []*url.URL {
	var out []*url.URL
	for i := range n {
		u, _ := url.Parse(fmt.Sprintf("%s/p/%d", p.URL, i))
		out = append(out, u)
	}
	return out
}

// onceEach reports each seed not fetched once per attempt its record
// counts. A worker may lose a URL's lease mid-fetch (stalled under load past
// it) and the URL is then fetched again, by design, as a URL tried once more:
// its record's attempt says how many fetches there were. A fetch no attempt
// accounts for (a pause, a put-back or a second pop that fetched a URL
// twice) is an error, as is a seed never fetched or never recorded.
func (p *pageSite) onceEach(t *testing.T, recs map[string]crawl.Record, seeds []*url.URL) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range seeds {
		n := p.fetched[u.Path]
		rec, ok := recs[u.String()]
		switch {
		case n == 0 || !ok:
			t.Errorf("%s fetched %d times, recorded: %v; want fetched and recorded", u.Path, n, ok)
		case n != rec.Attempt:
			t.Errorf("%s fetched %d times; its record says attempt %d (want once, or once per attempt)", u.Path, n, rec.Attempt)
		}
	}
}

// archivedCrawl seeds crawl name with set and seeds, runs one worker that
// archives into a WARC directory of its own to the crawl's end, within a
// minute, and returns how many response records each URL has there and
// the crawl's exported records by URL.
func archivedCrawl(t *testing.T, s *redistest.Server, name string, set settings.Settings, seeds []*url.URL) (map[string]int, map[string]crawl.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := admin.Seed(ctx, s.Client, name, set, seeds); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := fastOptions("w-" + name)
	o.WARC = &archive.Config{Dir: dir}
	runWorkers(t, ctx, s, name, o)
	archived := map[string]int{}
	eachWARCRecord(t, dir, func(r gowarc.Record) {
		if r.WarcRecord.Type() == gowarc.Response {
			archived[r.WarcRecord.WarcHeader().Get(gowarc.WarcTargetURI)]++
		}
	})
	return archived, exportedByURL(t, ctx, s.Client, name)
}

// wholeCrawl skips, with -short, a test that crawls for seconds (a whole
// site, a rate held over time, a pause waited out): go test ./... and CI
// run it, -short gives quick feedback without it.
func wholeCrawl(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a crawl of several seconds: skipped with -short (go test ./... runs it)")
	}
}
