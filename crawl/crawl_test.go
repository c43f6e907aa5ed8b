package crawl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/tcpproxy"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

func seedSite(t *testing.T, s *redistest.Server, site *testsite.Site, name string, set settings.Settings) {
	t.Helper()
	// Keys expire on miniredis as on Redis, the scheduler's lock among
	// them: a leader that lost its lock under load must not keep it.
	s.FollowWallClock(t)
	var seeds []*url.URL
	for _, r := range site.Roots() {
		u, _ := url.Parse(r)
		seeds = append(seeds, u)
	}
	rep, err := admin.Seed(context.Background(), s.Client, name, set, seeds)
	if err != nil || rep.Queued != len(seeds) {
		t.Fatalf("Seed = %+v, %v", rep, err)
	}
}

// runWorkers runs one worker per set of options on crawl name, all at once,
// until every one has returned; it fails the test when ctx ends first.
func runWorkers(t *testing.T, ctx context.Context, s *redistest.Server, name string, opts ...crawl.Options) {
	t.Helper()
	var wg sync.WaitGroup
	for _, o := range opts {
		w, err := crawl.NewWorker(ctx, s.Client, name, o)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				t.Errorf("worker %s: %v", o.ID, err)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the workers of %s did not finish in time: %v", name, context.Cause(ctx))
	}
}

// stallGuard is ctx, cancelled when progress has not moved for stall: a
// crawl that stopped making progress fails its test however long it has
// run, and one that progresses slowly (a loaded machine, the race
// detector) is left to finish within ctx. unwatch ends the watch.
func stallGuard(ctx context.Context, stall time.Duration, progress func() int64) (watched context.Context, unwatch func()) {
	watched, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(stall / 10)
		defer tick.Stop()
		last, since := progress(), time.Now()
		for {
			select {
			case <-done:
				return
			case <-watched.Done():
				return
			case <-tick.C:
			}
			if p := progress(); p != last {
				last, since = p, time.Now()
			} else if time.Since(since) >= stall {
				cancel(fmt.Errorf("no progress for %v", stall))
				return
			}
		}
	}()
	return watched, func() { close(done); cancel(nil) }
}

// seedAndCrawl seeds crawl name with set and seeds, then runs two workers
// (fastOptions) on it to its end, within a minute.
func seedAndCrawl(t *testing.T, s *redistest.Server, name string, set settings.Settings, seeds ...*url.URL) {
	t.Helper()
	if _, err := admin.Seed(context.Background(), s.Client, name, set, seeds); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runWorkers(t, ctx, s, name, fastOptions("w1"), fastOptions("w2"))
}

func fastOptions(id string) crawl.Options {
	return crawl.Options{ID: id, Concurrency: 4, ExitWhenDone: true, Leader: leader.ConfigForTTL(time.Second),
		SweepInterval: 50 * time.Millisecond, Lease: 2 * time.Second}
}

// Two workers crawl the whole test site: every URL of /_truth is fetched,
// nothing disallowed is, no URL twice (a flaky one twice), and both exit
// when done; status, export and reset see all of it. On one shard, and on
// three (links crossing shards, completion decided over two sweeps).
func TestTwoWorkersCrawlTheSite(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) { twoWorkersCrawlTheSite(t, shards) })
	}
}

func twoWorkersCrawlTheSite(t *testing.T, shards int) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 4, Pages: 30, Port: 0, ListenBase: "127.0.0.10"})
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		set := settings.Default()
		set.Rate, set.AllowPrivate, set.ExpectedURLs, set.Shards = math.Inf(1), true, 10000, shards
		seedSite(t, s, site, "site", set)

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var out1, out2 bytes.Buffer
		w1, w2 := fastOptions("w1"), fastOptions("w2")
		w1.Out, w2.Out = &out1, &out2
		runWorkers(t, ctx, s, "site", w1, w2)
		st := site.Stats()
		missing := site.Missing()
		for _, u := range missing {
			t.Errorf("not fetched: %s", u)
		}
		if over := site.Overfetched(0); len(st.Disallowed) > 0 || len(over) > 0 {
			t.Errorf("disallowed fetched %v; fetched too often %v", st.Disallowed, over)
		}
		status, err := status.Read(ctx, s.Client, "site")
		if err != nil || !status.Done || !status.Frontier.Empty() {
			t.Fatalf("status %+v, %v", status, err)
		}
		var exported bytes.Buffer
		rep, err := admin.Export(ctx, s.Client, "site", &exported, false)
		if err != nil || rep.Written != status.Counters["pages"]+status.Counters["skipped"] || rep.Trimmed != 0 ||
			rep.Written != status.Counters["records"] {
			t.Fatalf("exported %+v (%v); counters %v", rep, err, status.Counters)
		}
		// Each record is written to one --out, its worker's (or, swept, the
		// scheduler's): the two hold every record the crawl exported, and a
		// page's record names the worker whose --out it is in. (Which
		// worker fetched how many is the schedule's: one may fetch none.)
		lines := 0
		for id, out := range map[string]*bytes.Buffer{"w1": &out1, "w2": &out2} {
			for _, line := range bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var rec crawl.Record
				if err := json.Unmarshal(line, &rec); err != nil || rec.URL == "" || rec.Worker != "" && rec.Worker != id {
					t.Fatalf("%s's --out record %q: %v", id, line, err)
				}
				lines++
			}
		}
		if int64(lines) != rep.Written {
			t.Fatalf("the workers' --out hold %d records; the crawl exported %d", lines, rep.Written)
		}
		if len(missing) == 0 {
			t.Logf("fetched all %d truth URLs; %d requests in all; counters %v", len(site.Truth()), len(st.Fetched), status.Counters)
		}
		keys := s.Client.Keys(ctx, "*").Val()
		sort.Strings(keys)
		reset, err := admin.Reset(ctx, s.Client, "site", false)
		if err != nil || s.Client.DBSize(ctx).Val() != 0 || len(reset.Stopped) != 0 {
			t.Fatalf("reset deleted %d of %d keys (%v), left %v", reset.Deleted, len(keys), err, s.Client.Keys(ctx, "*").Val())
		}
	})
}

// A worker stopped gracefully resigns, so another takes over at once
// rather than after the lock's TTL (here a minute, longer than the test
// waits: only a resignation can explain the takeover).
func TestStoppedSchedulerResigns(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		stop := candidates(t, s, s.Client)
		first := awaitLeader(t, s, "")
		stop(first)
		if next := awaitLeader(t, s, first); next == first {
			t.Fatalf("%s still leads after stopping", first)
		}
	})
}

// A stopping scheduler whose Redis answers slowly still hands the role
// over: its resignation goes through a proxy held for 300 ms, six times
// the followers' retry interval (50 ms), and the other worker leads long
// before the lock's minute is out. (The resignation was bounded by the
// retry interval: a loaded Redis made it give up, and nobody led for a
// TTL.) miniredis and redis-server.
func TestAStoppingSchedulerResignsThroughASlowRedis(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		proxy := tcpproxy.Start(t, s.Addr)
		c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1})
		t.Cleanup(func() { c.Close() }) // after the workers stop (cleanups run last first)
		stop := candidates(t, s, c)
		first := awaitLeader(t, s, "")
		proxy.Pause()
		go func() {
			time.Sleep(300 * time.Millisecond) // the slow Redis itself: its length is what is tested
			proxy.Resume()
		}()
		stop(first)
		if next := awaitLeader(t, s, first); next == first {
			t.Fatalf("%s still leads after stopping", first)
		}
	})
}

// A scheduler whose client is closed under it (its subscription's
// channel closes) goes on pacing its sweeps by its timer until stopped:
// it read the closed channel's nil message and panicked. Three sweeps
// are seen to fail after the close (each logs it), the worker still
// running; stopped, it ends without an error. The client is closed once
// the worker says it leads: the lock in Redis is not that (closed between
// the lock's script and its reply, the campaign fails, and no sweep
// comes).
func TestASchedulerWhoseClientIsClosedDoesNotPanic(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		if _, err := admin.Seed(context.Background(), s.Client, "closed", settings.Default(), nil); err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		sweeps := make(chan struct{}, 64)
		o := fastOptions("w1")
		o.ExitWhenDone = false
		o.Leader = leader.ConfigForTTL(time.Minute) // it leads on, its lock renewed by nothing, past the test
		leading := make(chan struct{}, 1)
		o.Log = slog.New(slog.NewMultiHandler(onMessage{"sweep failed", sweeps}, onMessage{crawl.LogLeading, leading}))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		w, err := crawl.NewWorker(ctx, c, "closed", o)
		if err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		go func() { ended <- w.Run(ctx) }()
		select {
		case <-leading:
		case err := <-ended:
			t.Fatalf("the worker ended before it led: %v", err)
		case <-time.After(10 * time.Second): // bounds a broken test; leading is the event
			t.Fatal("the worker did not lead within 10 s")
		}
		c.Close()
		for i := range 3 {
			select {
			case <-sweeps:
			case err := <-ended:
				t.Fatalf("the worker ended after %d sweeps of a closed client: %v; want it sweeping until stopped", i, err)
			case <-time.After(10 * time.Second): // bounds a broken test; the sweeps are the event
				t.Fatalf("%d sweeps in 10 s after the client closed; want one every %v", i, o.SweepInterval)
			}
		}
		cancel()
		if err := <-ended; err != nil {
			t.Fatalf("stopped, the worker said %v", err)
		}
	})
}

// onMessage is a log handler that signals on ch (without blocking) each
// record whose message is msg.
type onMessage struct {
	msg string
	ch  chan struct{}
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h onMessage) WithGroup(string) slog.Handler            { return h }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}

// candidates seeds an empty crawl and starts two idle workers on c, w1
// and w2, whose lock lasts a minute and whose followers retry every
// 50 ms; stop(id) stops one and waits for it to end, and the test's end
// stops the rest. No seeds: a stopped worker's fetch loops end at once,
// and only the resignation is left to do.
func candidates(t *testing.T, s *redistest.Server, c redis.UniversalClient) (stop func(id string)) {
	t.Helper()
	if _, err := admin.Seed(context.Background(), s.Client, "resign", settings.Default(), nil); err != nil {
		t.Fatal(err)
	}
	cancels := map[string]context.CancelFunc{}
	done := map[string]chan struct{}{}
	for _, id := range []string{"w1", "w2"} {
		o := fastOptions(id)
		o.ExitWhenDone = false
		o.Leader = leader.ConfigForTTL(time.Minute)
		o.Leader.RetryInterval = 50 * time.Millisecond
		wctx, cancel := context.WithCancel(context.Background())
		cancels[id], done[id] = cancel, make(chan struct{})
		w, err := crawl.NewWorker(wctx, c, "resign", o)
		if err != nil {
			t.Fatal(err)
		}
		ch := done[id]
		go func() { defer close(ch); w.Run(wctx) }()
	}
	stop = func(id string) {
		cancels[id]()
		<-done[id]
	}
	t.Cleanup(func() {
		for id := range cancels {
			stop(id)
		}
	})
	return stop
}

// awaitLeader polls until someone other than not leads (the crawl's own
// state is the event; the bound only stops a broken test).
func awaitLeader(t *testing.T, s *redistest.Server, not string) string {
	t.Helper()
	return awaitLeaderOf(t, s, "resign", not)
}

// awaitLeaderOf is awaitLeader for crawl name.
func awaitLeaderOf(t *testing.T, s *redistest.Server, name, not string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		info, _, err := leader.Current(context.Background(), s.Client, keyspace.LeaderKey(name))
		if err == nil && info.ID != not {
			return info.ID
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no leader of %s other than %q within 10s", name, not)
	return ""
}

// Without --allow-private a loopback site is refused by the SSRF guard,
// and the record says so (not "disallowed by robots.txt").
func TestPrivateAddressRefusedWithAClearRecord(t *testing.T) {
	s := redistest.Mini(t)
	site, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	set := settings.Default()
	set.Rate = math.Inf(1)
	seedSite(t, s, site, "private", set)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := crawl.NewWorker(ctx, s.Client, "private", fastOptions("w1"))
	if err != nil {
		t.Fatal(err)
	}
	w.Run(ctx)
	var out bytes.Buffer
	if _, err := admin.Export(ctx, s.Client, "private", &out, false); err != nil {
		t.Fatal(err)
	}
	var rec crawl.Record
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil || !strings.Contains(rec.Error, "--allow-private") {
		t.Fatalf("record %s (%v): want an error naming --allow-private", out.String(), err)
	}
	if len(site.Stats().Fetched) != 0 {
		t.Fatal("the guarded crawl reached the site")
	}
}

// A page budget stops the crawl at exactly the budget (a URL in flight
// counts against it), and the workers exit with URLs still queued.
func TestPageBudget(t *testing.T) {
	for _, shards := range []int{1, 3} { // over three: shares of the budget moved between shards
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) { pageBudget(t, shards) })
	}
}

func pageBudget(t *testing.T, shards int) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 3, Pages: 200})
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		set := settings.Default()
		set.Rate, set.AllowPrivate, set.MaxPages, set.Shards = math.Inf(1), true, 25, shards
		seedSite(t, s, site, "budget", set)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		o := fastOptions("w1")
		w, err := crawl.NewWorker(ctx, s.Client, "budget", o)
		if err != nil {
			t.Fatal(err)
		}
		w.Run(ctx)
		if ctx.Err() != nil {
			t.Fatal("worker did not stop at the page budget")
		}
		st, err := status.Read(ctx, s.Client, "budget")
		if err != nil {
			t.Fatal(err)
		}
		pages := st.Counters["pages"]
		if pages != 25 || !st.Done {
			t.Fatalf("budget 25 with %d goroutines: %d pages fetched, done=%v", o.Concurrency, pages, st.Done)
		}
		if got := len(site.Stats().Fetched); int64(got) > pages+2 { // + robots-free extras: none expected beyond flaky retries
			t.Fatalf("site saw %d URLs for %d pages", got, pages)
		}
	})
}

// A worker refuses a concurrency past MaxConcurrency rather than start a
// goroutine per unit of it.
func TestConcurrencyIsBounded(t *testing.T) {
	s := redistest.Mini(t)
	if _, err := admin.Seed(context.Background(), s.Client, "c", settings.Default(), nil); err != nil {
		t.Fatal(err)
	}
	o := fastOptions("w1")
	o.Concurrency = 1_000_000
	if _, err := crawl.NewWorker(context.Background(), s.Client, "c", o); !errors.Is(err, crawl.ErrOptions) {
		t.Fatalf("NewWorker with concurrency 1000000: %v; want ErrOptions", err)
	}
	o.Concurrency = crawl.MaxConcurrency
	if _, err := crawl.NewWorker(context.Background(), s.Client, "c", o); err != nil {
		t.Fatalf("NewWorker at the maximum: %v", err)
	}
}

// One id, one live worker: a second process given a live worker's id is
// refused (it would share its WARC names and deregister it), while the
// stale registration of a killed run of the same id is waited out.
func TestWorkerIDIsOneLiveWorkers(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		if _, err := admin.Seed(ctx, s.Client, "ids", settings.Default(), nil); err != nil {
			t.Fatal(err)
		}
		o := fastOptions("same")
		o.ExitWhenDone = false
		o.Lease = 300 * time.Millisecond
		wctx, cancel := context.WithCancel(ctx)
		w, err := crawl.NewWorker(wctx, s.Client, "ids", o)
		if err != nil {
			t.Fatal(err)
		}
		ran := make(chan struct{})
		go func() { defer close(ran); w.Run(wctx) }()
		// The first worker heartbeats on: the second is refused.
		if _, err := crawl.NewWorker(ctx, s.Client, "ids", o); !errors.Is(err, crawl.ErrIDInUse) || !strings.Contains(err.Error(), "--id") {
			t.Fatalf("a second worker under a live id: %v; want ErrIDInUse naming --id", err)
		}
		cancel()
		<-ran
		// A killed run: registered, never heartbeating again, never
		// deregistering. The next run under its id waits it out.
		if s.Mini != nil {
			return // miniredis's TIME stands still unless a test moves it
		}
		killed := keyspace.KeysFor("ids").Workers
		s.Client.ZAdd(ctx, killed, redis.Z{Member: "same", Score: float64(time.Now().Add(200 * time.Millisecond).UnixMilli())})
		if _, err := crawl.NewWorker(ctx, s.Client, "ids", o); err != nil {
			t.Fatalf("after a killed run's registration lapsed: %v", err)
		}
	})
}
