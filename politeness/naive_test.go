package politeness_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redis/go-redis/v9"
)

// naiveWindow is the rate limiter of the blog posts: a counter per whole
// second of the client's clock, INCR then EXPIRE as two calls, a request
// allowed while the count is at most the rate.
type naiveWindow struct {
	c    *redis.Client
	rate int64
}

func (w naiveWindow) allow(ctx context.Context, host string, now time.Time) (bool, error) {
	key := fmt.Sprintf("naive:rate:%s:%d", host, now.Unix())
	n, err := w.c.Incr(ctx, key).Result()
	if err != nil {
		return false, err
	}
	if err := w.c.Expire(ctx, key, 2*time.Second).Err(); err != nil { // a crash before this leaves the key forever
		return false, err
	}
	return n <= w.rate, nil
}

// A window of whole seconds of the client's clock starts afresh at every
// second boundary: a burst at 0.990 s and another at 1.000 s are both let
// through, twice the rate in 10 ms. (The clock is the client's, so it is
// given here: two workers whose clocks disagree cut the windows in
// different places, which is worse.)
func TestNaiveFixedWindowAdmitsTwiceTheRate(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	w := naiveWindow{c: s.Client, rate: 10}
	edge := time.Unix(1_800_000_000, 0)
	admitted := 0
	for _, at := range []time.Time{edge.Add(-10 * time.Millisecond), edge} {
		for i := 0; i < 10; i++ {
			ok, err := w.allow(ctx, "docs.example.org", at)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				admitted++
			}
		}
	}
	if admitted != 20 {
		t.Fatalf("%d requests admitted in 10 ms at 10/s; the naive window was expected to admit 20", admitted)
	}
	t.Logf("fixed window of whole seconds, rate 10/s: %d requests admitted within 10 ms across a second boundary", admitted)
}

// The token bucket (bucket.lua, on Redis's clock) admits at most burst +
// rate × elapsed in any stretch of time: the same 20 requests at once get
// the burst of 10 and what a few milliseconds refill, not 20.
func TestBucketAdmitsAtMostBurstPlusRate(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	lim := politeness.NewLimiter(s.Client, 10, 10)
	start := time.Now()
	admitted := 0
	for i := 0; i < 20; i++ {
		ok, err := lim.Allow(ctx, "bucket:{docs.example.org}")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			admitted++
		}
	}
	bound := 10 + int(10*time.Since(start).Seconds()) // burst + what the elapsed time refilled
	if admitted < 10 || admitted > bound {
		t.Fatalf("%d of 20 requests admitted at 10/s, burst 10; want 10 to %d", admitted, bound)
	}
}

// A bucket script of the blog posts reads the bucket's state and does
// arithmetic on it: for a host never seen, the key is undefined, HGET
// answers nil, and the script fails on its first request instead of
// finding a full bucket.
func TestNaiveBucketScriptFailsOnANewHost(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	naive := redis.NewScript(`
local tokens = tonumber(redis.call('HGET', KEYS[1], 'tokens'))
if tokens - 1 < 0 then return 0 end
redis.call('HSET', KEYS[1], 'tokens', tokens - 1)
return 1`)
	err := naive.Run(ctx, s.Client, []string{"naive:bucket:{new.example.org}"}).Err()
	if err == nil || !strings.Contains(err.Error(), "nil value") {
		t.Fatalf("naive script on a new host: %v; it was expected to fail on arithmetic on nil", err)
	}
	t.Logf("naive bucket script, first request for a host: %v", err)
	ok, err := politeness.NewLimiter(s.Client, 10, 10).Allow(ctx, "bucket:{new.example.org}")
	if err != nil || !ok {
		t.Fatalf("bucket.lua on a new host: %v, %v; want a full bucket", ok, err)
	}
}
