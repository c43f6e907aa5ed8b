package pace

import (
	"slices"
	"sync"
	"time"
)

// LoopTimes is how long the last loopSamples URLs a worker's fetch loops
// took to the end kept a loop. The exchanger's policy counts the URLs its
// loops will take with them: with the slowest (a busy loop surely comes
// free within it) and then the ninth decile, what it may pop without a URL
// waiting past its token's window; with the fastest, when to ask again. It reads them once enough URLs were seen to
// say something of the spread. The loops add; the exchanger reads.
type LoopTimes struct {
	mu   sync.Mutex
	ring [loopSamples]time.Duration
	n    int // URLs added in all
}

const loopSamples = 64

// Add: a URL kept a loop d.
func (t *LoopTimes) Add(d time.Duration) {
	t.mu.Lock()
	t.ring[t.n%loopSamples] = max(d, 1)
	t.n++
	t.mu.Unlock()
}

// Read is the slowest, the fastest and the ninth decile of the last
// URLs, and how many they are, once at least enough were seen (zeros
// before).
func (t *LoopTimes) Read(enough int) (slow, fast, most time.Duration, n int) {
	t.mu.Lock()
	n = min(t.n, loopSamples)
	if t.n < min(enough, loopSamples) || n == 0 {
		t.mu.Unlock()
		return 0, 0, 0, 0
	}
	d := make([]time.Duration, n)
	copy(d, t.ring[:n])
	t.mu.Unlock()
	slices.Sort(d)
	return d[n-1], d[0], d[(9*n-1)/10], n
}
