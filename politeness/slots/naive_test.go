package slots_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/politeness/slots"
	"github.com/redis/go-redis/v9"
)

// naiveSemaphore is the semaphore of the blog posts: a counter, INCR to
// take a slot (DECR back when that went past the size), DECR to give it
// back. The count is the only record of who holds a slot, so a holder
// that dies between its INCR and its DECR holds one for ever.
type naiveSemaphore struct {
	c    *redis.Client
	size int64
}

func (n naiveSemaphore) acquire(ctx context.Context, key string) (bool, error) {
	v, err := n.c.Incr(ctx, key).Result()
	if err != nil {
		return false, err
	}
	if v > n.size {
		return false, n.c.Decr(ctx, key).Err()
	}
	return true, nil
}

func (n naiveSemaphore) release(ctx context.Context, key string) error {
	return n.c.Decr(ctx, key).Err()
}

// The holder's role: a process of its own (this test binary, run again)
// that takes a slot of the semaphore named by SLOTS_TEST_KIND, says so on
// its stdout, and then waits to be killed.
func TestMain(m *testing.M) {
	if kind := os.Getenv("SLOTS_TEST_KIND"); kind != "" {
		os.Exit(hold(kind, os.Getenv("SLOTS_TEST_ADDR")))
	}
	os.Exit(m.Run())
}

func hold(kind, addr string) int {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: addr})
	var ok bool
	var err error
	switch kind {
	case "naive":
		ok, err = naiveSemaphore{c: c, size: 1}.acquire(ctx, "naive")
	case "leased":
		var sem *slots.Semaphore
		if sem, err = slots.New(c, 1, killLease); err == nil {
			var g slots.Grant
			g, err = sem.Acquire(ctx, "leased", "doomed-worker")
			ok = g.OK
		}
	}
	if err != nil || !ok {
		fmt.Println("refused", err)
		return 1
	}
	fmt.Println("held")
	select {} // until killed
}

// killLease is the lease of the killed holder's slot.
const killLease = 300 * time.Millisecond

// A holder killed (SIGKILL, a process of its own) while it holds the only
// slot: the naive counter stays at 1 and refuses everyone after it for
// good; the leased semaphore refuses until the killed holder's lease
// lapses, then admits the next. On a real redis-server and on miniredis.
func TestAKilledHolderLeaksTheNaiveCountersSlotButNotALease(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		killHolder(t, s.Addr, "naive")
		killHolder(t, s.Addr, "leased")
		naive := naiveSemaphore{c: s.Client, size: 1}
		sem, err := slots.New(s.Client, 1, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		g, err := sem.Acquire(ctx, "leased", "next-worker")
		if err != nil {
			t.Fatal(err)
		}
		if g.OK {
			t.Fatal("the leased slot was free while its holder's lease ran: a slot would be shared")
		}
		if s.Mini != nil {
			s.Mini.FastForward(killLease) // miniredis's clock moves when told
		}
		// Each round waits for Redis's clock to pass the lease (what a real
		// server's does on its own); the naive counter is asked as often.
		admitted, leaked := false, true
		for range 100 {
			if g, err = sem.Acquire(ctx, "leased", "next-worker"); err != nil {
				t.Fatal(err)
			}
			ok, err := naive.acquire(ctx, "naive")
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				leaked = false
			}
			if admitted = g.OK; admitted {
				break
			}
			time.Sleep(g.Wait)
		}
		if !admitted {
			t.Fatal("the leased semaphore never freed the killed holder's slot")
		}
		if !leaked {
			t.Fatal("the naive counter freed a killed holder's slot: this test no longer shows the leak")
		}
		if n, _ := s.Client.Get(ctx, "naive").Int(); n != 1 {
			t.Fatalf("the naive counter reads %d; want the 1 the killed holder left", n)
		}
		t.Logf("after a holder's kill -9: the naive counter still reads 1 and refuses everyone; the leased slot was free again after its lease (%v)", killLease)
	})
}

// killHolder starts a holder of kind against the Redis at addr, waits for
// it to hold its slot, and kills it (SIGKILL, by its PID).
func killHolder(t *testing.T, addr, kind string) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SLOTS_TEST_KIND="+kind, "SLOTS_TEST_ADDR="+addr)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "held" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the %s holder said %q; want held", kind, line)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}
