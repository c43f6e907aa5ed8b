package leader_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// Two workers campaign for the scheduler role; each term gets a higher
// epoch, and a write fenced with an old epoch is refused.
func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	const key = "crawl:{demo}:leader"

	w1, _ := leader.NewElector(rdb, key, "worker-1", leader.DefaultConfig())
	w2, _ := leader.NewElector(rdb, key, "worker-2", leader.DefaultConfig())

	term1, _ := w1.Campaign(ctx)
	info, _ := w2.Leader(ctx)
	fmt.Printf("leader %s, epoch %d\n", info.ID, info.Epoch)

	term1.Resign(ctx)
	term2, _ := w2.Campaign(ctx)
	defer term2.Resign(ctx)
	info, _ = w1.Leader(ctx)
	fmt.Printf("leader %s, epoch %d\n", info.ID, info.Epoch)

	setStatus := fence.NewScript("status", `redis.call('SET', KEYS[2], ARGV[2]) return 'OK'`)
	_, err := setStatus.Run(ctx, rdb, leader.EpochKey(key), term1.Epoch(), []string{"crawl:{demo}:status"}, "written by worker-1")
	fmt.Println("old term's write fenced:", errors.Is(err, fence.ErrFenced))
	_, err = setStatus.Run(ctx, rdb, leader.EpochKey(key), term2.Epoch(), []string{"crawl:{demo}:status"}, "written by worker-2")
	fmt.Println("current term's write:", err == nil, rdb.Get(ctx, "crawl:{demo}:status").Val())
	// Output:
	// leader worker-1, epoch 1
	// leader worker-2, epoch 2
	// old term's write fenced: true
	// current term's write: true written by worker-2
}
