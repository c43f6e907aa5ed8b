package alternatives_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcrawl/crawler/alternatives"
	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// The tests start copies of this test binary as the lock's first holder;
// the environment tells a copy to play it instead of running tests.
func TestMain(m *testing.M) {
	if os.Getenv("ALT_ROLE") == "holder" {
		os.Exit(runHolder())
	}
	os.Exit(m.Run())
}

const ttl = 500 * time.Millisecond

// setFenced writes ARGV[2] at KEYS[2] for the current epoch's holder only.
var setFenced = fence.NewScript("status", `redis.call('SET', KEYS[2], ARGV[2]) return 1`)

// holder takes the lock (one Redis, or Redlock over masters) and writes
// the store's data key, fenced or not.
type holder struct {
	mode    string // "one" or "redlock"
	fenced  bool
	store   *redis.Client
	masters []*redis.Client
	lock    *leader.Lock
	grant   *alternatives.Grant
}

func (h *holder) take(ctx context.Context, id string) error {
	var err error
	if h.mode == "one" {
		h.lock, err = leader.Obtain(ctx, h.store, "res", id, ttl)
	} else {
		h.grant, err = (&alternatives.Redlock{Masters: h.masters}).Lock(ctx, "res", ttl)
	}
	return err
}

func (h *holder) write(ctx context.Context, value string) error {
	switch {
	case !h.fenced:
		return h.store.Set(ctx, "data", value, 0).Err()
	case h.mode == "one":
		_, err := setFenced.Run(ctx, h.store, leader.EpochKey("res"), h.lock.Epoch(), []string{"data"}, value)
		return err
	default:
		return alternatives.WriteFencedEach(ctx, h.store, "data", value, h.grant.Epochs)
	}
}

func client(url string) *redis.Client {
	opt, err := redis.ParseURL(url)
	if err != nil {
		panic(err)
	}
	return redis.NewClient(opt)
}

// runHolder is the first holder, A, in its own process: it takes the lock,
// says so, and writes "A" once told to (it is stopped in between).
func runHolder() int {
	ctx := context.Background()
	h := &holder{mode: os.Getenv("ALT_MODE"), fenced: os.Getenv("ALT_FENCED") == "1", store: client(os.Getenv("ALT_STORE"))}
	for _, u := range strings.Fields(os.Getenv("ALT_MASTERS")) {
		h.masters = append(h.masters, client(u))
	}
	if err := h.take(ctx, "A"); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("held")
	bufio.NewReader(os.Stdin).ReadString('\n')
	err := h.write(ctx, "A")
	switch {
	case errors.Is(err, fence.ErrFenced):
		fmt.Println("fenced", err)
	case err != nil:
		fmt.Println("error", err)
	default:
		fmt.Println("wrote")
	}
	return 0
}

// The scenario every discussion of Redlock turns on, with the first
// holder a real process: A takes the lock, is stopped (SIGSTOP) past the
// TTL just as it goes to write, B takes the lock and writes, A is
// continued and writes. One lock on the store's Redis, and Redlock over
// three redis-server masters, each with and without a fence: the lock
// alone, Redlock's majority included, lets A's late write overwrite B's;
// the epoch fence refuses it on either.
func TestALateWriteAfterAPause(t *testing.T) {
	store := redistest.Real(t)
	var masters []string
	for range 3 {
		masters = append(masters, redistest.Real(t).URL())
	}
	for _, mode := range []string{"one", "redlock"} {
		for _, fenced := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fenced=%v", mode, fenced), func(t *testing.T) {
				ctx := context.Background()
				for _, u := range append([]string{store.URL()}, masters...) {
					c := client(u)
					c.FlushAll(ctx)
					c.Close()
				}
				a, stdin, out := startHolder(t, mode, fenced, store.URL(), masters)
				if line := readLine(t, out); line != "held" {
					t.Fatalf("A: %q", line)
				}
				a.Process.Signal(syscall.SIGSTOP)
				awaitStopped(t, a.Process.Pid) // a signal is delivered when the kernel next schedules A
				fmt.Fprintln(stdin, "write")   // A is told to write, and stopped before it can
				b := &holder{mode: mode, fenced: fenced, store: store.Client}
				for _, u := range masters {
					c := client(u)
					defer c.Close()
					b.masters = append(b.masters, c)
				}
				deadline := time.Now().Add(10 * time.Second)
				for b.take(ctx, "B") != nil { // the lock is A's until its TTL lapses
					if time.Now().After(deadline) {
						t.Fatal("B never got the lock")
					}
					time.Sleep(10 * time.Millisecond)
				}
				if err := b.write(ctx, "B"); err != nil {
					t.Fatalf("B, the holder, could not write: %v", err)
				}
				a.Process.Signal(syscall.SIGCONT)
				said := readLine(t, out)
				got := store.Client.Get(ctx, "data").Val()
				t.Logf("A, continued, said %q; the store holds %q", said, got)
				if fenced && (got != "B" || !strings.HasPrefix(said, "fenced")) {
					t.Errorf("fenced: the store holds %q and A said %q; want B's write kept and A's refused", got, said)
				}
				if !fenced && (got != "A" || said != "wrote") {
					t.Errorf("unfenced: the store holds %q and A said %q; want A's late write to have gone through (the lock alone cannot stop it)", got, said)
				}
			})
		}
	}
}

func startHolder(t *testing.T, mode string, fenced bool, store string, masters []string) (*exec.Cmd, io.Writer, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(redistest.Self(t), "-test.run=^$")
	f := "0"
	if fenced {
		f = "1"
	}
	cmd.Env = append(os.Environ(), "ALT_ROLE=holder", "ALT_MODE="+mode, "ALT_FENCED="+f,
		"ALT_STORE="+store, "ALT_MASTERS="+strings.Join(masters, " "))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, stdin, bufio.NewReader(out)
}

// awaitStopped waits until the kernel says the process is stopped (state
// T in /proc/PID/stat).
func awaitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		// pid (comm) state ...: the state follows the last ')'
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && len(b) > i+2 && b[i+2] == 'T' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped after SIGSTOP: %s", pid, b)
		}
		time.Sleep(time.Millisecond)
	}
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("the holder's output: %v", err)
	}
	return strings.TrimSpace(line)
}

// What Redlock's extra masters buy, and what they cost: with one of three
// masters lost the lock is still granted (one Redis lost is no lock at
// all), with two lost it is not; but a master that comes back empty (no
// fsync'd append-only file, no delay of a TTL before it rejoins) forgets
// the grant, and a second holder gets a majority while the first still
// holds the lock.
func TestRedlockAndLostMasters(t *testing.T) {
	ctx := context.Background()
	var servers []*redistest.Server
	rl := &alternatives.Redlock{}
	for range 3 {
		s := redistest.Real(t)
		servers = append(servers, s)
		rl.Masters = append(rl.Masters, s.Client)
	}
	servers[2].Crash(t)
	a, err := rl.Lock(ctx, "res", time.Minute)
	if err != nil {
		t.Fatalf("one master of three lost: %v; want the lock granted by the other two", err)
	}
	servers[1].Crash(t)
	if _, err := rl.Lock(ctx, "other", time.Minute); !errors.Is(err, alternatives.ErrNotGranted) {
		t.Fatalf("two masters of three lost: %v; want no majority", err)
	}
	// A holds the lock on masters 0 and 1; 1 comes back empty, 2 comes back.
	servers[1].Restart(t)
	servers[2].Restart(t)
	b, err := rl.Lock(ctx, "res", time.Minute)
	if err != nil {
		t.Fatalf("B: %v; want it granted by the two masters that never saw A's grant", err)
	}
	if !time.Now().Before(a.Until) || !time.Now().Before(b.Until) {
		t.Fatal("a grant lapsed during the test: it shows nothing")
	}
	t.Logf("two holders at once: A's epochs %v until %v, B's %v", a.Epochs, a.Until.Format(time.StampMilli), b.Epochs)
}
