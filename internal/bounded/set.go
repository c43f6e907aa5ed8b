// Package bounded holds a set of strings of bounded memory.
package bounded

import "sync"

// Set remembers strings (the hosts a process put in the render lane for
// a --render-match, so that each costs one call; those it offered samples
// of), up to Memory, then forgets all and begins again: forgetting costs
// one call more, never a wrong answer. The zero Set is empty.
type Set struct {
	mu    sync.Mutex
	hosts map[string]struct{}
}

// Memory is the most strings a Set holds.
const Memory = 100_000

// Has: host is in the set.
func (l *Set) Has(host string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.hosts[host]
	return ok
}

// Add puts host in the set.
func (l *Set) Add(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hosts == nil || len(l.hosts) >= Memory {
		l.hosts = map[string]struct{}{}
	}
	l.hosts[host] = struct{}{}
}
