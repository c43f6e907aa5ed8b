package crawl

import "sync"

// known is a bounded, worker-local set of URLs the crawl has certainly seen
// (Redis said so, or this worker just enqueued them). A Bloom filter never
// forgets, so links every page repeats (navigation) need not go to Redis
// again — as long as Redis keeps what it said: when Redis goes back in time
// (frontier.ErrRolledBack), the set is cleared. Two generations bound the
// memory: when the current one fills, it becomes the previous one and the
// oldest is dropped; a dropped URL only costs one more Redis check.
type known struct {
	mu        sync.Mutex
	cur, prev map[string]struct{}
	half      int
}

func newKnown(capacity int) *known {
	h := max(capacity/2, 1)
	return &known{cur: make(map[string]struct{}, h), prev: map[string]struct{}{}, half: h}
}

func (k *known) has(u string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.cur[u]; ok {
		return true
	}
	_, ok := k.prev[u]
	return ok
}

func (k *known) add(urls ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, u := range urls {
		if len(k.cur) >= k.half {
			k.prev, k.cur = k.cur, make(map[string]struct{}, k.half)
		}
		k.cur[u] = struct{}{}
	}
}

// clear forgets every URL.
func (k *known) clear() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cur, k.prev = make(map[string]struct{}, k.half), map[string]struct{}{}
}
