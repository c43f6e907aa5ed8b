package politeness_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redis/go-redis/v9"
)

// One request per second with a burst of two: two at once, then one a second.
func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	lim := politeness.NewLimiter(rdb, 1, 2)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Duration{0, 0, 0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond, 2 * time.Second} {
		mr.SetTime(clock.Add(at)) // the script reads the server's clock
		ok, _ := lim.Allow(ctx, "crawl:{demo}:rate:example.com")
		fmt.Printf("t=%v allowed=%v\n", at, ok)
	}
	// Output:
	// t=0s allowed=true
	// t=0s allowed=true
	// t=0s allowed=false
	// t=500ms allowed=false
	// t=1s allowed=true
	// t=1.5s allowed=false
	// t=2s allowed=true
}
