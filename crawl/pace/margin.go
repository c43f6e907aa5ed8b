package pace

import (
	"math"
	"time"
)

// margin is the part of a token's late window a pop keeps for the
// clocks: an eighth of it, and more by how far the latest URL that missed
// its window missed it, that excess halving every missHalfLife; never
// more than half the window, so that a pop still brings what the loops
// start in the other half. Its property: a worker whose loops stall
// longer than their recent times say (a garbage collection, a CPU shared
// with the site and Redis) pops fewer URLs at once, rather than sending
// the same share of each pop back again and again; one that stops
// stalling pops as before within seconds.
func (p *Policy) margin(now time.Time) time.Duration {
	m := p.late / 8
	if p.missed > 0 {
		age := now.Sub(p.missedAt)
		if age < 0 {
			age = 0
		}
		m += time.Duration(float64(p.missed) * math.Exp2(-float64(age)/float64(missHalfLife)))
	}
	return min(m, p.late/2)
}

// missHalfLife: how fast a pop forgets a missed window (policy.margin).
const missHalfLife = time.Second

// MissedWindow: a URL was taken by, late after its token's window closed.
// The next pops keep that much more of the window (margin): the largest
// of the misses still remembered.
func (p *Policy) MissedWindow(now time.Time, late time.Duration) {
	if late <= 0 {
		return
	}
	late = min(late, p.late/2-p.late/8) // no more is kept (margin)
	if cur := p.margin(now) - p.late/8; late > cur {
		p.missed, p.missedAt = late, now
	}
}
