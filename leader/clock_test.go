package leader_test

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a leader.Clock that moves only when the test says so.
// Each After call is announced on waits, so a test can tell when the
// elector has finished reacting to a step and waits again.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []fakeTimer
	waiting chan struct{}
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), waiting: make(chan struct{}, 1000)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
	} else {
		c.timers = append(c.timers, fakeTimer{c.now.Add(d), ch})
	}
	c.waiting <- struct{}{}
	return ch
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
		} else {
			t.ch <- c.now
		}
	}
	c.timers = kept
}

// awaitWaits blocks until the elector has called After n more times.
func (c *fakeClock) awaitWaits(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-c.waiting:
		case <-time.After(10 * time.Second): // a bound for a broken test, not a synchronisation
			t.Fatalf("the elector did not wait again (%d of %d)", i, n)
		}
	}
}

// drain forgets the After calls announced so far.
func (c *fakeClock) drain() {
	for {
		select {
		case <-c.waiting:
		default:
			return
		}
	}
}
