package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a real Redis Cluster of masters only, on loopback, for one
// test: each node a redis-server in cluster mode, the slots spread evenly
// by redis-cli --cluster create.
type Cluster struct {
	Nodes  []*Server
	Client *redis.ClusterClient
}

// Addrs are the nodes' host:port addresses.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, n := range c.Nodes {
		a = append(a, n.Addr)
	}
	return a
}

// RealCluster starts a cluster of `masters` nodes and stops them (by PID)
// at cleanup. It needs redis-server and redis-cli (Debian: redis-server
// pulls in redis-tools); missing, it skips, or fails with
// CRAWLER_REQUIRE_REDIS=1. extra are more redis-server arguments for
// every node (say, "--appendonly", "yes" for a node that keeps its data
// through Crash and Restart).
func RealCluster(t testing.TB, masters int, extra ...string) *Cluster {
	t.Helper()
	return RealClusterWithReplicas(t, masters, 0, extra...)
}

// RealClusterWithReplicas is RealCluster with `replicas` replicas of each
// master (redis-cli assigns them): a master killed (Server.Crash) is
// failed over to its replica after the nodes' timeout (2 s).
func RealClusterWithReplicas(t testing.TB, masters, replicas int, extra ...string) *Cluster {
	t.Helper()
	bin, err := Binary()
	var cli string
	if err == nil {
		cli, err = cliBinary(bin)
	}
	if err != nil {
		if Required() {
			t.Fatalf("%v; CRAWLER_REQUIRE_REDIS=1 makes this a failure", err)
		}
		t.Skipf("%v; skipping the cluster test", err)
	}
	c := &Cluster{}
	for i := 0; i < masters*(1+replicas); i++ {
		c.Nodes = append(c.Nodes, startClusterNode(t, bin, extra...))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", fmt.Sprint(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	c.AwaitOK(t)
	c.Client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { c.Client.Close() })
	return c
}

// startClusterNode starts one node; its cluster bus gets a free port of
// its own (port+10000, Redis's default, may be out of range or taken).
func startClusterNode(t testing.TB, bin string, extra ...string) *Server {
	t.Helper()
	return startFree(t, bin, func(dir string) []string {
		bus, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		return append([]string{"--cluster-enabled", "yes", "--cluster-port", fmt.Sprint(bus),
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "2000"}, extra...)
	})
}

// AwaitOK waits until every node reports cluster_state:ok (the slots are
// assigned and every node agrees), for at most 20 s. Cluster state has no
// event to wait on: this polls, bounded.
func (c *Cluster) AwaitOK(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok := true
		var last string
		for _, n := range c.Nodes {
			info, err := n.Client.ClusterInfo(context.Background()).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				ok, last = false, fmt.Sprintf("%s: %v %s", n.Addr, err, firstLine(info))
				break
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: cluster not ok after 20 s: %s", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

// cliBinary finds redis-cli: $REDIS_CLI, beside redis-server, then PATH.
func cliBinary(server string) (string, error) {
	if p := os.Getenv("REDIS_CLI"); p != "" {
		return p, nil
	}
	if p := filepath.Join(filepath.Dir(server), "redis-cli"); fileExists(p) {
		return p, nil
	}
	if p, err := exec.LookPath("redis-cli"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("redistest: redis-cli not found (install the Debian package redis-tools, or set REDIS_CLI)")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
