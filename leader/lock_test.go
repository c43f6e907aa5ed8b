package leader_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
)

func TestLockExclusiveAndEpochsIncrease(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := ctxFor(t, 10*time.Second)
		const key = "t:{lock}:a"
		a, err := leader.Obtain(ctx, s.Client, key, "a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := leader.Obtain(ctx, s.Client, key, "b", time.Minute); !errors.Is(err, leader.ErrNotObtained) {
			t.Fatalf("second Obtain: got %v, want ErrNotObtained", err)
		}
		info, last, err := leader.Current(ctx, s.Client, key)
		if err != nil || info.ID != "a" || info.Epoch != a.Epoch() || last != a.Epoch() || info.TTL <= 0 {
			t.Fatalf("Current = %+v, %d, %v; want holder a at epoch %d", info, last, err, a.Epoch())
		}
		if err := a.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Release(ctx); !errors.Is(err, leader.ErrLockLost) {
			t.Fatalf("second Release: got %v, want ErrLockLost", err)
		}
		if err := a.Refresh(ctx, time.Minute); !errors.Is(err, leader.ErrLockLost) {
			t.Fatalf("Refresh after Release: got %v, want ErrLockLost (no silent re-acquire)", err)
		}
		if _, _, err := leader.Current(ctx, s.Client, key); !errors.Is(err, leader.ErrNoLeader) {
			t.Fatalf("Current after release: %v, want ErrNoLeader", err)
		}
		b, err := leader.Obtain(ctx, s.Client, key, "b", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if b.Epoch() != a.Epoch()+1 {
			t.Fatalf("epochs %d then %d, want strictly +1", a.Epoch(), b.Epoch())
		}
		// A stale holder (same key, old value) can neither refresh nor release the new lock.
		if err := a.Release(ctx); !errors.Is(err, leader.ErrLockLost) {
			t.Fatalf("stale Release: %v", err)
		}
		if info, _, err := leader.Current(ctx, s.Client, key); err != nil || info.ID != "b" {
			t.Fatalf("stale release deleted the new holder's lock: %+v", info)
		}
	})
}

func TestExactlyOneOfManyGoroutinesObtains(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := ctxFor(t, 10*time.Second)
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, lost := 0, 0
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, err := leader.Obtain(ctx, s.Client, "t:{lock}:race", fmt.Sprint(i), time.Minute)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					won++
				case errors.Is(err, leader.ErrNotObtained):
					lost++
				default:
					t.Error(err)
				}
			}(i)
		}
		wg.Wait()
		if won != 1 || lost != 99 {
			t.Fatalf("won %d, lost %d; want exactly 1 and 99", won, lost)
		}
	})
}

// The classic lock demo, done right: a deliberately non-atomic
// read–sleep–write of a counter, guarded only by the lock, from several
// goroutines in several OS processes. Any gap in mutual exclusion loses an
// increment, and the final count comes out short.
func TestMutualExclusionAcrossProcesses(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		const procs, goroutines, rounds = 3, 4, 15
		var cmds []interface{ Wait() error }
		for p := 0; p < procs; p++ {
			cmd, _ := startHelper(t, "incrementer",
				"LEADER_TEST_REDIS="+s.URL(),
				"LEADER_TEST_GOROUTINES="+strconv.Itoa(goroutines),
				"LEADER_TEST_ROUNDS="+strconv.Itoa(rounds))
			cmds = append(cmds, cmd)
		}
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Fatalf("incrementer %d: %v", i, err)
			}
		}
		got, err := s.Client.Get(context.Background(), "t:{mutex}:counter").Int()
		if err != nil {
			t.Fatal(err)
		}
		if want := procs * goroutines * rounds; got != want {
			t.Fatalf("counter = %d, want %d: increments were lost, so two holders overlapped", got, want)
		}
	})
}

func runIncrementer() int {
	c := helperClient()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 1024)
	for g := 0; g < envInt("LEADER_TEST_GOROUTINES"); g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			id := fmt.Sprintf("%d/%d", os.Getpid(), g)
			for r := 0; r < envInt("LEADER_TEST_ROUNDS"); r++ {
				var l *leader.Lock
				for {
					var err error
					l, err = leader.Obtain(ctx, c, "t:{mutex}:lock", id, 10*time.Second)
					if err == nil {
						break
					}
					if !errors.Is(err, leader.ErrNotObtained) {
						errs <- err
						return
					}
					select {
					case <-ctx.Done():
						errs <- ctx.Err()
						return
					case <-time.After(time.Millisecond):
					}
				}
				n, _ := c.Get(ctx, "t:{mutex}:counter").Int() // missing counts as 0
				time.Sleep(2 * time.Millisecond)              // widen the race window on purpose
				if err := c.Set(ctx, "t:{mutex}:counter", n+1, 0).Err(); err != nil {
					errs <- err
				}
				if err := l.Release(ctx); err != nil {
					errs <- err
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		fmt.Fprintln(os.Stderr, "incrementer:", err)
		return 1
	}
	return 0
}
