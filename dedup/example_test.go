package dedup_test

import (
	"context"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redcrawl/crawler/dedup"
	"github.com/redis/go-redis/v9"
)

func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	seen, err := dedup.Open(ctx, rdb, "crawl:{demo}:seen", dedup.Params{Capacity: 1000, FPRate: 0.01})
	if err != nil {
		fmt.Println(err)
		return
	}
	present, _ := seen.Contains(ctx, []string{"test1"})
	fmt.Println("test1 present:", present[0])
	isNew, _ := seen.AddNew(ctx, []string{"test1"})
	fmt.Println("test1 added as new:", isNew[0])
	present, _ = seen.Contains(ctx, []string{"test1", "test2"})
	fmt.Println("test1 present:", present[0], "test2 present:", present[1])
	isNew, _ = seen.AddNew(ctx, []string{"test1"})
	fmt.Println("test1 new again:", isNew[0])

	st, _ := seen.Stats(ctx)
	fmt.Printf("layers %d, items %d, m %d bits, k %d\n", len(st.Layers), st.Count, st.Bits, st.Layers[0].K)
	// Output:
	// test1 present: false
	// test1 added as new: true
	// test1 present: true test2 present: false
	// test1 new again: false
	// layers 1, items 1, m 32256 bits, k 6
}
