package crawl_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/payloads"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/wacz"
	"github.com/redis/go-redis/v9"
)

// Two crawls of one 400-page site, the second with --dedup-from the
// first and 30 % of the pages changed in between: the second's WARC files
// hold a revisit record, referring to the first crawl's response, for at
// least 95 % of the unchanged pages, and a whole response for every
// changed one; the WACZ of both crawls' folders verifies, each revisit
// resolved to a response it packs. A third crawl, stopped half-way and
// reset, leaves the first's committed index as it was and commits nothing
// of its own. On redis-server, and over 3 shards on a Redis Cluster of 3
// masters, where each crawl's committed index is in a slot of its own
// (the scripts' semantics on both servers: frontier/payloads).
func TestASecondCrawlArchivesTheFirstsPayloadsAsRevisits(t *testing.T) {
	wholeCrawl(t)
	t.Run("redis-server", func(t *testing.T) { crossCrawls(t, redistest.Real(t).Client, 1) })
	t.Run("cluster", func(t *testing.T) { crossCrawls(t, redistest.RealCluster(t, 3).Client, 3) })
}

func crossCrawls(t *testing.T, c redis.UniversalClient, shards int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const pages = 400
	changed := func(i int) bool { return i%10 < 3 }
	var version, served atomic.Int64
	version.Store(1)
	var onRequest atomic.Pointer[func(int64)]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i int
		if _, err := fmt.Sscanf(r.URL.Path, "/p/%d", &i); err != nil {
			http.NotFound(w, r)
			return
		}
		v := int64(1)
		if changed(i) {
			v = version.Load()
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><head><title>page %d</title></head><body><p>page %d, version %d</p></body></html>", i, i, v)
		if f := onRequest.Load(); f != nil {
			(*f)(served.Add(1))
		}
	}))
	defer srv.Close()
	var seeds []*url.URL
	for i := range pages {
		u, _ := url.Parse(fmt.Sprintf("%s/p/%d", srv.URL, i))
		seeds = append(seeds, u)
	}
	crawlTo := func(name string, from []string, dir string, o crawl.Options) {
		t.Helper()
		set := settings.Default()
		set.Rate, set.AllowPrivate, set.MaxDepth, set.DedupPayloads, set.DedupFrom, set.Shards = math.Inf(1), true, 0, true, from, shards
		if _, err := admin.Seed(ctx, c, name, set, seeds); err != nil {
			t.Fatal(err)
		}
		o.WARC = &archive.Config{Dir: dir}
		w, err := crawl.NewWorker(ctx, c, name, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Run(ctx); err != nil || ctx.Err() != nil {
			t.Fatalf("crawl %s: %v (%v)", name, err, ctx.Err())
		}
	}
	dir1, dir2 := t.TempDir(), t.TempDir()
	crawlTo("week1", nil, dir1, fastOptions("w1"))
	if _, n, ok, err := payloads.Committed(ctx, c, "week1"); err != nil || !ok || n != pages {
		t.Fatalf("the first crawl's committed digests: %d, %v, %v; want %d", n, ok, err, pages)
	}
	if st, err := status.Read(ctx, c, "week1"); err != nil || st.Committed == nil || !strings.Contains(st.String(), "committed   400 payload digests") ||
		!strings.Contains(st.String(), "committed its 400 payload digests") {
		t.Errorf("the first crawl's status: %v; want its 400 digests said committed, and the commit in its events:\n%v", err, st)
	}
	before := c.HGetAll(ctx, "crawl:{week1}:digests:committed").Val()
	version.Store(2)

	// The third crawl: stopped at its 100th request, unfinished, and reset.
	wctx, stop := context.WithCancel(ctx)
	stopAt := func(n int64) {
		if n == 100 {
			stop()
		}
	}
	onRequest.Store(&stopAt)
	o3 := fastOptions("w3")
	o3.ExitWhenDone = false
	set := settings.Default()
	set.Rate, set.AllowPrivate, set.MaxDepth, set.DedupPayloads, set.DedupFrom, set.Shards = math.Inf(1), true, 0, true, []string{"week1"}, shards
	if _, err := admin.Seed(ctx, c, "unfinished", set, seeds); err != nil {
		t.Fatal(err)
	}
	o3.WARC = &archive.Config{Dir: t.TempDir()}
	w3, err := crawl.NewWorker(ctx, c, "unfinished", o3)
	if err != nil {
		t.Fatal(err)
	}
	if err := w3.Run(wctx); err != nil {
		t.Fatal(err)
	}
	onRequest.Store(nil)
	if n := c.HLen(ctx, "crawl:{unfinished}:digests").Val(); n == 0 {
		t.Fatal("the unfinished crawl claimed no payload: the reset below would test nothing")
	}
	if _, _, ok, _ := payloads.Committed(ctx, c, "unfinished"); ok {
		t.Error("the unfinished crawl's digests were committed")
	}
	if _, err := admin.Reset(ctx, c, "unfinished", false); err != nil {
		t.Fatal(err)
	}
	after := c.HGetAll(ctx, "crawl:{week1}:digests:committed").Val()
	if len(after) != len(before) || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the first crawl's committed index changed: %d entries, then %d", len(before), len(after))
	}
	if n := c.Exists(ctx, "crawl:{unfinished}:digests", "crawl:{unfinished}:config").Val(); n > 0 {
		t.Errorf("the reset crawl left %d of its index and config", n)
	}

	crawlTo("week2", []string{"week1"}, dir2, fastOptions("w2"))
	if st, err := status.Read(ctx, c, "week2"); err != nil || !strings.Contains(st.String(), "payloads archived once (and by week1)") {
		t.Errorf("the second crawl's status: %v; want its settings to say it refers to week1:\n%v", err, st)
	}
	revisits, responses := map[string]string{}, map[string]bool{}
	eachWARCRecord(t, dir2, func(r gowarc.Record) {
		h := r.WarcRecord.WarcHeader()
		switch r.WarcRecord.Type() {
		case gowarc.Revisit:
			revisits[h.Get(gowarc.WarcTargetURI)] = h.Get(gowarc.WarcRefersToTargetURI)
		case gowarc.Response:
			responses[h.Get(gowarc.WarcTargetURI)] = true
		}
	})
	unchangedRevisits := 0
	for i := range pages {
		u := seeds[i].String()
		switch {
		case changed(i) && (!responses[u] || revisits[u] != ""):
			t.Errorf("changed page %s: response %v, revisit of %q; want a response", u, responses[u], revisits[u])
		case !changed(i) && revisits[u] == u:
			unchangedRevisits++
		case !changed(i) && revisits[u] != "":
			t.Errorf("unchanged page %s: a revisit of %s; want of itself in the first crawl", u, revisits[u])
		}
	}
	t.Logf("%d of %d unchanged pages archived as revisits of the first crawl; %d responses", unchangedRevisits, pages*7/10, len(responses))
	if unchangedRevisits*100 < 95*pages*7/10 {
		t.Errorf("%d of %d unchanged pages are revisits; want at least 95 %%", unchangedRevisits, pages*7/10)
	}

	var files []string
	for _, d := range []string{dir1, dir2} {
		f, _ := filepath.Glob(filepath.Join(d, "*.warc.gz"))
		files = append(files, f...)
	}
	var srcs []wacz.Source
	for _, f := range files {
		srcs = append(srcs, wacz.Source{Name: f, Open: func() (io.ReadCloser, error) { return os.Open(f) }})
	}
	var pkg bytes.Buffer
	if _, err := wacz.Pack(&pkg, srcs, wacz.Options{}); err != nil {
		t.Fatal(err)
	}
	ck, err := wacz.Verify(bytes.NewReader(pkg.Bytes()), int64(pkg.Len()))
	if err != nil || ck.Revisits != len(revisits) {
		t.Errorf("the WACZ of both crawls: %+v, %v; want it verified with its %d revisits resolved", ck, err, len(revisits))
	}
	t.Logf("the WACZ of both crawls: %+v", ck)
}

// seed --dedup-from refuses what it cannot refer to, saying which crawl
// and why (no such crawl, one without --dedup-payloads, one not
// complete), and commits a complete crawl's digests that no scheduler was
// left to commit, so that the new crawl refers to them.
func TestSeedDedupFromChecksTheEarlierCrawl(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		seed, _ := url.Parse("http://a.test/")
		set := settings.Default()
		plain, withDigests := set, set
		withDigests.DedupPayloads = true
		for name, st := range map[string]settings.Settings{"plain": plain, "earlier": withDigests} {
			if _, err := admin.Seed(ctx, s.Client, name, st, []*url.URL{seed}); err != nil {
				t.Fatal(err)
			}
		}
		later := withDigests
		for from, says := range map[string]string{"nonesuch": "no such crawl", "plain": "without --dedup-payloads", "earlier": "has not completed"} {
			later.DedupFrom = []string{from}
			if _, err := admin.Seed(ctx, s.Client, "later", later, []*url.URL{seed}); !errors.Is(err, admin.ErrDedupFrom) || !strings.Contains(err.Error(), says) {
				t.Errorf("--dedup-from %s: %v; want %v saying %q", from, err, admin.ErrDedupFrom, says)
			}
		}
		fr := frontierOf(t, s.Client, "earlier", 1)
		if _, _, err := fr.Digests.Claim(ctx, "sha1:X", "http://a.test/", time.Now()); err != nil {
			t.Fatal(err)
		}
		s.Client.Set(ctx, keyspace.KeysFor("earlier").DoneFlag, "1", 0) // over, its scheduler gone before it committed
		later.DedupFrom = []string{"earlier"}
		if _, err := admin.Seed(ctx, s.Client, "later", later, []*url.URL{seed}); err != nil {
			t.Fatal(err)
		}
		if _, n, ok, err := payloads.Committed(ctx, s.Client, "earlier"); err != nil || !ok || n != 1 {
			t.Errorf("the earlier crawl's digests after the seed: %d, committed %v, %v; want 1, committed", n, ok, err)
		}
	})
}
