package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Replica starts a redis-server replicating master, on a free port, and
// returns once it has the master's data (at most 20 s; replication has no
// event to wait on, so this polls, bounded). The master is told not to
// wait the 5 s Redis waits by default for more replicas before a sync.
func Replica(t testing.TB, master *Server) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := master.Client.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	r := startFree(t, bin, func(string) []string { return []string{"--replicaof", "127.0.0.1", fmt.Sprint(master.port)} })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if strings.Contains(r.Client.Info(ctx, "replication").Val(), "master_link_status:up") {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: replica %s never synced with %s", r.Addr, master.Addr)
		}
	}
}

// Sentinel starts a Redis Sentinel (redis-server --sentinel) on a free
// loopback port that monitors master under name (quorum 1; a master down
// for a second is failed over to a replica), and stops it by PID at
// cleanup. It returns the sentinel's host:port.
func Sentinel(t testing.TB, master *Server, name string) string {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf") // the sentinel rewrites it: it must be writable
	lines := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 1\nsentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 10000\n", name, master.port)
	if err := os.WriteFile(conf, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		cmd, err := launch(bin, []string{conf, "--sentinel", "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
			"--protected-mode", "no", "--logfile", "", "--daemonize", "no", "--dir", dir}, "+monitor master "+name)
		if err == nil {
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			return fmt.Sprintf("127.0.0.1:%d", port)
		}
		if attempt == 4 {
			t.Fatalf("redistest: starting a sentinel: %v", err)
		}
	}
}
