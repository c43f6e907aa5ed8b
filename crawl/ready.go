package crawl

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// readyQueue holds a worker's leased URLs until a fetch loop takes them,
// earliest token window first (frontier.Lease.NotBefore; a URL of a host
// with no limit opens at its reply's arrival). A loop takes a URL only
// once its window is open, so no loop sleeps holding a URL while another,
// due now, waits behind it; the exchanger adds what each pop brings. Its
// next is what a loop would take at a given moment, with no clock of its
// own (the timing tests call it); take is next with the waiting.
type readyQueue struct {
	mu      sync.Mutex
	h       readyHeap
	seq     uint64
	changed chan struct{} // closed (and replaced) when a URL is added
	now     func() time.Time
}

type readyItem struct {
	l   leased
	seq uint64 // arrival order: URLs whose windows open together go in the order popped
}

type readyHeap []readyItem

func (h readyHeap) Len() int { return len(h) }
func (h readyHeap) Less(i, j int) bool {
	a, b := h[i].l.lease.NotBefore, h[j].l.lease.NotBefore
	if !a.Equal(b) {
		return a.Before(b)
	}
	return h[i].seq < h[j].seq
}
func (h readyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)   { *h = append(*h, x.(readyItem)) }
func (h *readyHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// newReadyQueue is an empty queue whose windows are read on now, the
// clock the leases' windows were placed on (frontier.Options.Clock).
func newReadyQueue(now func() time.Time) *readyQueue {
	return &readyQueue{changed: make(chan struct{}), now: now}
}

// add queues popped URLs.
func (q *readyQueue) add(ls ...leased) {
	if len(ls) == 0 {
		return
	}
	q.mu.Lock()
	for _, l := range ls {
		q.seq++
		heap.Push(&q.h, readyItem{l, q.seq})
	}
	close(q.changed)
	q.changed = make(chan struct{})
	q.mu.Unlock()
}

// len is the number of URLs queued.
func (q *readyQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.h)
}

// next takes the URL whose window opened first, if one is open at now
// (ok); else it says when the first opens (at; zero when none is queued).
func (q *readyQueue) next(now time.Time) (l leased, ok bool, at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.nextLocked(now)
}

func (q *readyQueue) nextLocked(now time.Time) (leased, bool, time.Time) {
	if len(q.h) == 0 {
		return leased{}, false, time.Time{}
	}
	if first := q.h[0].l.lease.NotBefore; first.After(now) {
		return leased{}, false, first
	}
	return heap.Pop(&q.h).(readyItem).l, true, time.Time{}
}

// take waits until a URL's window opens, and takes it; false when stop
// ends first. empty is called (without the lock) each time it finds
// nothing queued at all.
func (q *readyQueue) take(stop context.Context, empty func()) (leased, bool) {
	for {
		q.mu.Lock()
		now := q.now()
		l, ok, at := q.nextLocked(now)
		changed := q.changed
		q.mu.Unlock()
		if ok {
			return l, true
		}
		var t *time.Timer
		var fire <-chan time.Time
		if at.IsZero() {
			empty()
		} else {
			t = time.NewTimer(at.Sub(now))
			fire = t.C
		}
		stopped := false
		select {
		case <-changed:
		case <-fire:
		case <-stop.Done():
			stopped = true
		}
		if t != nil {
			t.Stop()
		}
		if stopped {
			return leased{}, false
		}
	}
}

// drain takes every URL queued, due or not.
func (q *readyQueue) drain() []leased {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]leased, len(q.h))
	for i, it := range q.h {
		out[i] = it.l
	}
	q.h = q.h[:0]
	return out
}
