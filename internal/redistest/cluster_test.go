package redistest

import (
	"context"
	"fmt"
	"testing"
)

// The helper's cluster is a working cluster: keys of different hash tags
// land on every master, and a crashed master comes back with its slots.
func TestRealClusterSpreadsKeys(t *testing.T) {
	c := RealCluster(t, 3)
	ctx := context.Background()
	for i := 0; i < 300; i++ {
		if err := c.Client.Set(ctx, fmt.Sprintf("k:{%d}", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		if keys := n.Client.DBSize(ctx).Val(); keys < 50 {
			t.Errorf("%s holds %d of 300 keys; want a real share", n.Addr, keys)
		}
	}
	c.Nodes[1].Crash(t)
	c.Nodes[1].Restart(t) // nodes.conf brings its slots back; its keys are gone (no persistence)
	c.AwaitOK(t)
	if err := c.Client.Set(ctx, "after", 1, 0).Err(); err != nil {
		t.Fatalf("writing after a master restarted: %v", err)
	}
}
