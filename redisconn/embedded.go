package redisconn

import (
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Embedded starts an in-process Redis (miniredis) on a free loopback
// port, for a crawl on one machine without a server; stop ends it, and
// what it held is gone with it. Its clock follows the process's, so that
// lock, lease and cache TTLs run as on a real server.
func Embedded() (c redis.UniversalClient, stop func(), err error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, nil, fmt.Errorf("embedded Redis: %v", err)
	}
	// miniredis expires keys only when told time has passed: tell it.
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				mr.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { close(done); rdb.Close(); mr.Close() }, nil
}
