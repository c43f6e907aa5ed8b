package crawl

import (
	"sync"
	"time"
)

// loopTimes is how long the last loopSamples URLs a worker's fetch loops
// took to the end kept a loop. The exchanger's policy counts the URLs its
// loops will take with the slowest and the fastest of them: with the
// slowest, what it may pop without a URL waiting past its token's window
// (a busy loop surely comes free within the slowest time); with the
// fastest, when to ask again. It reads them once enough URLs were seen to
// say something of the spread. The loops add; the exchanger reads.
type loopTimes struct {
	mu   sync.Mutex
	ring [loopSamples]time.Duration
	n    int // URLs added in all
}

const loopSamples = 64

// add: a URL kept a loop d.
func (t *loopTimes) add(d time.Duration) {
	t.mu.Lock()
	t.ring[t.n%loopSamples] = max(d, 1)
	t.n++
	t.mu.Unlock()
}

// read is the slowest and the fastest of the last URLs, and how many
// they are, once at least enough were seen (0, 0, 0 before).
func (t *loopTimes) read(enough int) (slow, fast time.Duration, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n = min(t.n, loopSamples)
	if t.n < min(enough, loopSamples) || n == 0 {
		return 0, 0, 0
	}
	for _, d := range t.ring[:n] {
		slow = max(slow, d)
		if fast == 0 || d < fast {
			fast = d
		}
	}
	return slow, fast, n
}
