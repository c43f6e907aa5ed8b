package leader

import "time"

// Clock is the local time an Elector reads and waits on: the step-down
// deadline, the renewal ticks, and the retries of Campaign and Observe.
// Config.Clock nil means the machine's clock; a test passes a fake one to
// run an election step by step without waiting out real TTLs. Redis's own
// clock, which expires the lock, is not this one.
type Clock interface {
	Now() time.Time
	// After sends the time on the returned channel once d has passed.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
