package crawl_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redcrawl/crawler/internal/tmpfs"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// slowHook delays every command and pipeline by d: Redis far away, or busy.
type slowHook struct{ d time.Duration }

func (h slowHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h slowHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { time.Sleep(h.d); return next(ctx, cmd) }
}
func (h slowHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { time.Sleep(h.d); return next(ctx, cmds) }
}

// A Redis a second away makes a crawl slower, never stops it: every call
// takes over a second, and the worker still sends what it finished.
func TestSlowRedisSlowsTheCrawlDown(t *testing.T) {
	wholeCrawl(t)
	t.Parallel() // most of it is waiting
	s := redistest.Real(t)
	site, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 12, ListenBase: "127.0.0.150"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	set := settings.Default()
	set.Rate, set.AllowPrivate = math.Inf(1), true // no token calls: the exchange is what is slow
	seedSite(t, s, site, "slow", set)
	slow := s.NewClient(t)
	slow.AddHook(slowHook{1100 * time.Millisecond})
	o := fastOptions("w1")
	o.Leader, o.Lease = leader.DefaultConfig(), 10*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := crawl.NewWorker(ctx, slow, "slow", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err != nil || ctx.Err() != nil {
		t.Fatalf("the worker against a slow Redis: %v (context: %v); %d pages ok", err, ctx.Err(), w.Counters.OK.Load())
	}
	if missing := site.Missing(); len(missing) > 0 {
		t.Fatalf("%d truth URLs never fetched against a slow Redis: %v", len(missing), missing[:min(5, len(missing))])
	}
}

// fullDisk accepts limit bytes, then fails every write as a full disk does.
type fullDisk struct{ limit, n int }

func (f *fullDisk) Write(p []byte) (int, error) {
	if f.n+len(p) > f.limit {
		return 0, syscall.ENOSPC
	}
	f.n += len(p)
	return len(p), nil
}

// smallSite starts a test site of 2 hosts × 60 pages (closed at the test's
// end) and seeds it as crawl name, with no rate limit.
func smallSite(t *testing.T, s *redistest.Server, name string) *testsite.Site {
	t.Helper()
	site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 60, Latency: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(site.Close)
	set := settings.Default()
	set.Rate, set.AllowPrivate = math.Inf(1), true
	seedSite(t, s, site, name, set)
	return site
}

// A worker whose --out cannot be written stops with an error, once, like a
// full WARC directory; what it had not finished goes back to the queue, so
// another worker crawls the rest and nothing is lost.
func TestFullOutFileStopsTheWorker(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := smallSite(t, s, "fullout")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		o := fastOptions("w1")
		o.Out = &fullDisk{limit: 4000}
		var logs syncBuf
		o.Log = slog.New(slog.NewTextHandler(&logs, nil))
		w, err := crawl.NewWorker(ctx, s.Client, "fullout", o)
		if err != nil {
			t.Fatal(err)
		}
		err = w.Run(ctx)
		if err == nil || !strings.Contains(err.Error(), "cannot write --out") || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("a worker with a full --out: %v; want it stopped with the write error", err)
		}
		if n := strings.Count(logs.String(), "writing --out failed"); n != 1 {
			t.Errorf("%d error lines for the full --out; want one", n)
		}
		runWorkers(t, ctx, s, "fullout", fastOptions("w2"))
		if missing := site.Missing(); len(missing) > 0 {
			t.Fatalf("%d truth URLs never fetched after the first worker stopped", len(missing))
		}
	})
}

// A worker whose WARC directory fills up stops with the write error; the
// page it could not archive goes back, so another worker crawls the rest;
// and the file it leaves is cut back to whole records, each the response
// of exactly one record on the results stream, as the stream says.
func TestFullWARCDiskStopsTheWorkerAndKeepsTheFileWhole(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := smallSite(t, s, "fullwarc")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		dir := tmpfs.Mount(t, 32<<10)
		o := fastOptions("w1")
		o.WARC = &archive.Config{Dir: dir}
		var logs syncBuf
		o.Log = slog.New(slog.NewTextHandler(&logs, nil))
		w, err := crawl.NewWorker(ctx, s.Client, "fullwarc", o)
		if err != nil {
			t.Fatal(err)
		}
		err = w.Run(ctx)
		if err == nil || !strings.Contains(err.Error(), "cannot write the WARC archive") || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("a worker with a full WARC directory: %v; want it stopped with the write error", err)
		}
		// The stop is said; the cut too when a record was torn, which
		// archive's TestFullDiskCutsTheTornFileBack makes sure of (here the
		// write may fail at a record's start, tearing nothing).
		if !strings.Contains(logs.String(), "WARC archiving stopped at a failed write") {
			t.Errorf("the failed WARC write was not said; log:\n%s", logs.String())
		}
		runWorkers(t, ctx, s, "fullwarc", fastOptions("w2"))
		if missing := site.Missing(); len(missing) > 0 {
			t.Fatalf("%d truth URLs never fetched after the first worker stopped", len(missing))
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		if len(files) != 1 || strings.HasSuffix(files[0], ".open") {
			t.Fatalf("WARC files %v; want one, closed", files)
		}
		archived := map[int64]string{} // response offset → its URL
		r, err := gowarc.NewWarcFileReader(files[0], 0, gowarc.WithStrictValidation())
		if err != nil {
			t.Fatal(err)
		}
		for rec, err := range r.Records() {
			if err != nil {
				t.Fatalf("the WARC file after %d responses: %v", len(archived), err)
			}
			if rec.WarcRecord.Type() == gowarc.Response {
				archived[rec.Offset] = rec.WarcRecord.WarcHeader().Get(gowarc.WarcTargetURI)
			}
			rec.Close()
		}
		r.Close()
		var out strings.Builder
		if _, err := admin.Export(ctx, s.Client, "fullwarc", &out, false); err != nil {
			t.Fatal(err)
		}
		pointing := 0
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var rec crawl.Record
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			if rec.WARC == nil {
				continue
			}
			pointing++
			if rec.WARC.File != filepath.Base(files[0]) || archived[rec.WARC.Offset] != rec.URL {
				t.Errorf("record of %s points at %+v, where the file holds %q", rec.URL, *rec.WARC, archived[rec.WARC.Offset])
			}
		}
		if pointing == 0 || pointing != len(archived) {
			t.Fatalf("%d records point into the WARC file, which holds %d responses; want the same, more than 0", pointing, len(archived))
		}
	})
}
