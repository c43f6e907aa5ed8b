package crawl_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
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
	t.Parallel() // most of it is waiting
	s := redistest.Real(t)
	site, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 12, ListenBase: "127.0.0.150"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	set := crawl.DefaultSettings()
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
