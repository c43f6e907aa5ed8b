package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Sentinel starts a Redis Sentinel (redis-server --sentinel) on a free
// loopback port that monitors master under name (quorum 1), and stops it
// by PID at cleanup. It returns the sentinel's host:port.
func Sentinel(t testing.TB, master *Server, name string) string {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf") // the sentinel rewrites it: it must be writable
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\n", name, master.port)), 0o644); err != nil {
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
