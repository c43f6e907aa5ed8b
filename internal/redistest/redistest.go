// Package redistest gives tests a Redis to talk to: a fresh real redis-server
// on a free loopback port, or an in-process miniredis. Every Lua script in
// RedCrawl is tested on both, because miniredis is not Redis.
//
// A missing redis-server skips the real-Redis half of a test, unless
// CRAWLER_REQUIRE_REDIS=1 (set by .ci/run), which turns it into a failure.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Server is one Redis for one test.
type Server struct {
	Kind   string // "redis-server" or "miniredis"
	Addr   string // host:port on loopback
	Client *redis.Client
	// Mini is set for miniredis, whose clock a test may move (SetTime, FastForward).
	Mini *miniredis.Miniredis

	cmd      *exec.Cmd
	stopped  sync.Once
	bin, dir string
	port     int
	extra    []string // more redis-server arguments (cluster mode), kept for Restart
}

// URL is the server's address as a redis:// URL, for child processes.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// NewClient opens another client to the same server; it is closed at cleanup.
func (s *Server) NewClient(t testing.TB) *redis.Client {
	o := &redis.Options{Addr: s.Addr}
	if s.Mini != nil {
		// miniredis compiles a script at every call, in a new Lua state:
		// under the race detector on a loaded machine one call of the
		// exchange can outlast go-redis's 3 s read timeout, and go-redis
		// then sends it again, running twice a script the test ran once
		// (CI saw a Crawl-delay's "first request" answered twice).
		o.ReadTimeout = time.Minute
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// Stop makes the server unreachable: the redis-server process is killed by PID,
// a miniredis is closed. Safe to call twice.
func (s *Server) Stop() {
	s.stopped.Do(func() {
		if s.Mini != nil {
			s.Mini.Close()
			return
		}
		if s.cmd != nil && s.cmd.Process != nil {
			s.cmd.Process.Kill()
			s.cmd.Wait()
		}
	})
}

// Crash kills the redis-server process by PID with SIGKILL: nothing is
// saved on the way out. Restart brings it back.
func (s *Server) Crash(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		t.Fatal("redistest: Crash needs a real redis-server")
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// Restart starts redis-server again on the same port and directory after
// Crash. It loads the RDB file a SAVE wrote there, if any: Redis comes back
// as it was at that SAVE, the way a restore from an older snapshot does.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var n *Server
		if n, err = start(s.bin, s.port, s.dir, s.extra...); err == nil {
			s.cmd = n.cmd
			return
		}
	}
	t.Fatalf("redistest: restarting redis-server: %v", err)
}

// Required reports whether a missing redis-server is a failure rather than a skip.
func Required() bool { return os.Getenv("CRAWLER_REQUIRE_REDIS") == "1" }

// Binary finds redis-server: $REDIS_SERVER, then PATH, then Debian's location.
func Binary() (string, error) {
	if p := os.Getenv("REDIS_SERVER"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("redistest: redis-server not found (install the Debian package redis-server, or set REDIS_SERVER)")
}

// Real starts a fresh redis-server for this test and stops it (by PID) at cleanup.
func Real(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if Required() {
			t.Fatalf("%v; CRAWLER_REQUIRE_REDIS=1 makes this a failure", err)
		}
		t.Skipf("%v; skipping the real-Redis half (set CRAWLER_REQUIRE_REDIS=1 to fail instead)", err)
	}
	return startFree(t, bin, func(string) []string { return nil })
}

// startFree starts redis-server on a free port, with the extra arguments
// args gives for the server's directory, and stops it at cleanup. Another
// process may take the port between the probe and the start: it tries
// five ports.
func startFree(t testing.TB, bin string, args func(dir string) []string) *Server {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		s, err := start(bin, port, dir, args(dir)...)
		if err == nil {
			t.Cleanup(s.Stop)
			s.Client = s.NewClient(t)
			return s
		}
		lastErr = err
	}
	t.Fatalf("redistest: starting redis-server: %v", lastErr)
	return nil
}

// Mini starts an in-process miniredis for this test.
func Mini(t testing.TB) *Server {
	t.Helper()
	m := miniredis.RunT(t)
	s := &Server{Kind: "miniredis", Addr: m.Addr(), Mini: m}
	s.Client = s.NewClient(t)
	return s
}

// Both runs fn as two subtests, one on miniredis and one on a real redis-server.
func Both(t *testing.T, fn func(t *testing.T, s *Server)) {
	t.Helper()
	t.Run("miniredis", func(t *testing.T) { fn(t, Mini(t)) })
	t.Run("redis-server", func(t *testing.T) { fn(t, Real(t)) })
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start launches redis-server (automatic saves and AOF off: a test decides
// when to SAVE) in the foreground with its log on stdout and
// waits for the line that says it accepts connections: an event, not a sleep.
func start(bin string, port int, dir string, extra ...string) (*Server, error) {
	cmd, err := launch(bin, append([]string{
		"--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", "", "--daemonize", "no", "--protected-mode", "no"}, extra...), "Ready to accept connections")
	if err != nil {
		return nil, fmt.Errorf("redis-server on port %d: %w", port, err)
	}
	return &Server{Kind: "redis-server", Addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, bin: bin, dir: dir, port: port, extra: extra}, nil
}

// launch starts bin with args, its log on stdout, and waits (at most 10 s)
// for the log line containing ready: an event, not a sleep.
func launch(bin string, args []string, ready string) (*exec.Cmd, error) {
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	up := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		var log []string
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, ready) {
				up <- nil
				for sc.Scan() { // keep draining so the server never blocks on its log
				}
				return
			}
			log = append(log, line)
		}
		up <- fmt.Errorf("exited: %s", strings.Join(tail(log, 5), " | "))
	}()
	select {
	case err := <-up:
		if err != nil {
			cmd.Wait()
			return nil, err
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("not ready after 10s")
	}
	return cmd, nil
}

func tail(s []string, n int) []string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Self is the path of the running test binary, for tests that start
// copies of themselves as separate OS processes.
func Self(t testing.TB) string {
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Clean(p)
}

// FollowWallClock makes a miniredis expire keys as real time passes (it
// otherwise only moves on FastForward), so TTL tests read the same on both
// servers: miniredis's ClockTTL, which moves every TTL by the time elapsed
// on each access, to the nanosecond. (A ticker that fast-forwarded every
// 5 ms let a TTL lag the wall clock by a step, more under load, so that a
// token bucket's key outlived its time.) A no-op for redis-server; ends at
// test cleanup.
func (s *Server) FollowWallClock(t testing.TB) {
	if s.Mini == nil {
		return
	}
	s.Mini.ClockTTL(true)
	t.Cleanup(func() { s.Mini.ClockTTL(false) })
}

// RoundTrips counts the commands and pipelines c sends: one per network
// round trip (a pipeline counts once). Benchmarks report it per operation.
func RoundTrips(c *redis.Client) *atomic.Int64 {
	n := &atomic.Int64{}
	c.AddHook(countHook{n})
	return n
}

type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// CPU is the CPU time (user + system) the server behind c has used so far,
// from INFO cpu: the difference over a run is what the run cost Redis.
func CPU(t testing.TB, c *redis.Client) time.Duration {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// CommandStat is one command's line of INFO commandstats: its calls, and
// the time Redis spent executing them (µs).
type CommandStat struct{ Calls, Usec int64 }

// CommandStats reads INFO commandstats of the server behind c (since its
// last CONFIG RESETSTAT): command name, as Redis spells it ("evalsha",
// "config|resetstat") -> its calls and time.
func CommandStats(t testing.TB, c *redis.Client) map[string]CommandStat {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return ParseCommandStats(info)
}

// ParseCommandStats reads the text of INFO commandstats.
func ParseCommandStats(info string) map[string]CommandStat {
	out := map[string]CommandStat{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isCmd := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isCmd {
			continue
		}
		var st CommandStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				st.Calls = n
			case "usec":
				st.Usec = n
			}
		}
		out[name] = st
	}
	return out
}

// UsedMemory is the server's used_memory (INFO memory), in bytes: a test
// that makes Redis run out of memory sets maxmemory a little above it.
func (s *Server) UsedMemory(t testing.TB) int64 {
	t.Helper()
	info, err := s.Client.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("used_memory %q", v)
			}
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}
