package leader_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// expire makes the lock at key run out now, as it does for a holder paused
// past its TTL (a GC pause, SIGSTOP, a slow network), and waits until
// Redis has dropped it.
func expire(t *testing.T, c *redis.Client, key string) {
	t.Helper()
	ctx := context.Background()
	c.PExpire(ctx, key, time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for c.Exists(ctx, key).Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%s never expired", key)
		}
		time.Sleep(time.Millisecond)
	}
}

// counter is the shared state a lock guards, read and written back in
// two steps (so only mutual exclusion keeps an increment from being lost).
type counter struct {
	t   *testing.T
	c   *redis.Client
	key string
}

func (n counter) read() int64 {
	n.t.Helper()
	v, err := n.c.Get(context.Background(), n.key).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		n.t.Fatal(err)
	}
	return v
}

func (n counter) write(v int64) {
	n.t.Helper()
	if err := n.c.Set(context.Background(), n.key, v, 0).Err(); err != nil {
		n.t.Fatal(err)
	}
}

// The lock of the blog posts: SET NX PX to take it, and a bare DEL, or
// GET-compare-then-DEL as two calls, to release it. The interleaving below
// is the one that bites, step by step: holder A is paused past its TTL, B
// takes the lock, A's release deletes B's lock, and C walks in while B is
// still inside. The counter they guard (read, then write back + 1) ends at
// 1 after two increments.
func TestNaiveLockReleaseDeletesTheNextHoldersLock(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	c := s.Client
	for _, naive := range []struct {
		name  string
		check func(key, token string) bool // the release's first call, before the pause
	}{
		{"bare DEL", func(string, string) bool { return true }},
		{"GET then DEL", func(key, token string) bool { return c.Get(ctx, key).Val() == token }},
	} {
		t.Run(naive.name, func(t *testing.T) {
			key, n := "naive:"+naive.name, counter{t, c, "naive:counter:" + naive.name}
			take := func(token string) bool {
				ok, err := c.SetNX(ctx, key, token, 10*time.Second).Result()
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if !take("A") {
				t.Fatal("A could not take a free lock")
			}
			mine := naive.check(key, "A") // A starts to release: the lock is still A's
			expire(t, c, key)             // ... and A is paused past the TTL
			if !take("B") {
				t.Fatal("B could not take the expired lock")
			}
			b := n.read() // B is inside
			if mine {
				if err := c.Del(ctx, key).Err(); err != nil { // A's release goes on: it deletes B's lock
					t.Fatal(err)
				}
			}
			if !take("C") {
				t.Fatal("C was kept out: the naive release did not bite")
			}
			cval := n.read() // C reads while B is still inside
			n.write(b + 1)   // B writes back its increment
			n.write(cval + 1)
			if got := n.read(); got != 1 {
				t.Fatalf("counter %d after two increments; the naive lock was expected to lose one", got)
			}
			t.Logf("%s: B and C held the lock at once; counter 1 after 2 increments", naive.name)
		})
	}
}

// The same interleaving with leader.Lock: Release compares and deletes in
// one script, so A's late release is refused (ErrLockLost), C is kept out
// until B is done, and the counter ends at 2.
func TestLockReleaseLeavesTheNextHoldersLock(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	c := s.Client
	const key = "correct:lock"
	n := counter{t, c, "correct:counter"}
	a, err := leader.Obtain(ctx, c, key, "A", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	expire(t, c, key)
	b, err := leader.Obtain(ctx, c, key, "B", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	bval := n.read()
	if err := a.Release(ctx); !errors.Is(err, leader.ErrLockLost) {
		t.Fatalf("A's late release: %v; want ErrLockLost", err)
	}
	if _, err := leader.Obtain(ctx, c, key, "C", 10*time.Second); !errors.Is(err, leader.ErrNotObtained) {
		t.Fatalf("C while B holds the lock: %v; want ErrNotObtained", err)
	}
	n.write(bval + 1)
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cl, err := leader.Obtain(ctx, c, key, "C", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n.write(n.read() + 1)
	if got := n.read(); got != 2 || cl.Epoch() <= b.Epoch() {
		t.Fatalf("counter %d (want 2); epochs B %d, C %d", got, b.Epoch(), cl.Epoch())
	}
}
