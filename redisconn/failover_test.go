package redisconn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A cluster client follows a master's failover to its replica at once,
// not at its next periodic reload: here the periodic reload is an hour
// away, so only the reload an error asks for can find the promoted
// replica. (Before, workers dialled a dead master for ~50 s after its
// replica took over.)
func TestClusterClientFollowsAFailover(t *testing.T) {
	cl := redistest.RealClusterWithReplicas(t, 3, 1)
	c := NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ClusterStateReloadInterval: time.Hour, MaxRetries: 1})
	defer c.Close()
	ctx := context.Background()
	const key = "crawl:{failover}:probe"
	if err := c.Set(ctx, key, "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	slot := cl.Client.ClusterKeySlot(ctx, key).Val()
	master := ownerOf(t, cl, slot, "")
	var dead *redistest.Server
	for _, n := range cl.Nodes {
		if n.Addr == master {
			dead = n
		}
	}
	// The replica has the write before its master dies (it may still be
	// making its first sync: WAIT again, 20 times at most).
	for i := 0; ; i++ {
		n, err := dead.Client.Do(ctx, "WAIT", 1, 1000).Int()
		if err == nil && n == 1 {
			break
		}
		if i == 20 {
			t.Fatalf("WAIT for the replica: %d, %v", n, err)
		}
	}
	killed := time.Now()
	dead.Crash(t)
	var promoted string
	for i := 0; i < 300 && promoted == ""; i++ { // the nodes' timeout is 2 s; 30 s at most
		promoted = ownerOf(t, cl, slot, master)
		if promoted == "" {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if promoted == "" {
		t.Fatal("the replica was not promoted within 30 s")
	}
	promotedAt := time.Now()
	var err error
	attempts := 0
	for ; attempts < 50; attempts++ { // 50 × ≥100 ms: far less than the hour to the periodic reload
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		var v string
		v, err = c.Get(cctx, key).Result()
		cancel()
		if err == nil {
			if v != "before" {
				t.Fatalf("after the failover %s holds %q; want the value written before", key, v)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the client still fails %d attempts after %s took over from %s: %v", attempts, promoted, master, err)
	}
	t.Logf("master %s killed; %s promoted %.1f s later; the client reached it %.1f s after that (%d failed attempts)",
		master, promoted, promotedAt.Sub(killed).Seconds(), time.Since(promotedAt).Seconds(), attempts)
}

// ownerOf asks the live nodes which master serves slot, and returns it
// unless it is not (the old master, "" before a failover).
func ownerOf(t *testing.T, cl *redistest.Cluster, slot int64, not string) string {
	t.Helper()
	for _, n := range cl.Nodes {
		if n.Addr == not {
			continue
		}
		slots, err := n.Client.ClusterSlots(context.Background()).Result()
		if err != nil {
			continue
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) && len(s.Nodes) > 0 {
				if addr := s.Nodes[0].Addr; addr != not && !strings.HasSuffix(addr, ":0") {
					return addr
				}
				return ""
			}
		}
	}
	return ""
}
