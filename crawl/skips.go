package crawl

import "sync"

// skips counts refused URLs by reason, until the heartbeat sends them to
// the crawl's counters.
type skips struct {
	mu sync.Mutex
	n  map[string]int64
}

func (s *skips) add(reason string) { s.addN(reason, 1) }

func (s *skips) addN(reason string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int64{}
	}
	s.n[reason] += n
}

// take returns the counts so far and starts again from zero.
func (s *skips) take() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.n
	s.n = nil
	return n
}
