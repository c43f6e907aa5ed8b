package alternatives

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"
)

// A Trace is when each client asks, as offsets from the trace's start.
type Trace [][]time.Duration

// StormTrace is clients silent for half a second, then asking as fast as
// every 4 ms each for 1.2 s, then at a trickle (a request a client every
// 200 ms) to 3 s: started at a whole second of Redis's clock, its storm
// straddles the edge of a second.
func StormTrace(clients int) Trace {
	tr := make(Trace, clients)
	for c := range tr {
		shift := time.Duration(c) * time.Millisecond // the clients not in step
		for at := 500 * time.Millisecond; at < 3*time.Second; {
			tr[c] = append(tr[c], at+shift)
			if at < 1700*time.Millisecond {
				at += 4 * time.Millisecond
			} else {
				at += 200 * time.Millisecond
			}
		}
	}
	return tr
}

// Let are the requests a limiter let through, by when they went
// (Redis's clock).
type Let map[string][]time.Time

// Replay runs the trace against every limiter at once, in real time from
// start (each client asks each limiter in turn, on its own host key):
// the same requests at the same moments, to within a few round trips.
func Replay(ctx context.Context, tr Trace, start time.Time, host string, ls []Limiter) (Let, error) {
	var mu sync.Mutex
	let := Let{}
	errs := make(chan error, len(tr))
	var wg sync.WaitGroup
	for _, asks := range tr {
		wg.Go(func() {
			for _, off := range asks {
				if d := time.Until(start.Add(off)); d > 0 {
					time.Sleep(d) // the trace's own schedule, not a wait for an event
				}
				for _, l := range ls {
					ok, at, err := l.Take(ctx, host)
					if err != nil {
						errs <- err
						return
					}
					if ok {
						mu.Lock()
						let[l.Name()] = append(let[l.Name()], at)
						mu.Unlock()
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	for _, ts := range let {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	return let, nil
}

// Gaps says how evenly ts (sorted) are spaced: the shortest gap, and the
// gaps' coefficient of variation (0: perfectly even).
func Gaps(ts []time.Time) (least time.Duration, cv float64) {
	if len(ts) < 3 {
		return 0, 0
	}
	least = time.Duration(math.MaxInt64)
	var sum, sq float64
	for i := 1; i < len(ts); i++ {
		g := ts[i].Sub(ts[i-1])
		least = min(least, g)
		sum += float64(g)
		sq += float64(g) * float64(g)
	}
	n := float64(len(ts) - 1)
	mean := sum / n
	return least, math.Sqrt(max(sq/n-mean*mean, 0)) / mean
}
