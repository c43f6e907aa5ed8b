package leader

import (
	"fmt"
	"time"
)

// Config tunes an Elector. Start from DefaultConfig.
type Config struct {
	// TTL is how long the lock lives without renewal. A leader that crashes
	// is replaced about TTL + RetryInterval after its last renewal.
	TTL time.Duration

	// RenewInterval is the time between renewals; TTL/3 leaves room for two
	// failed renewals before the lock can expire.
	RenewInterval time.Duration

	// RetryInterval is how often a follower tries to take a free lock, and
	// how often Observe looks.
	RetryInterval time.Duration

	// SafetyMargin is how long before the lock could expire the leader
	// stops acting on its own: leadership ends at
	// (time the last successful renewal was sent) + TTL − SafetyMargin, by
	// the local clock. The margin absorbs clock-rate drift between this host
	// and Redis and the delay between noticing and actually stopping.
	SafetyMargin time.Duration

	// Clock is the local clock; nil for the machine's (see Clock).
	Clock Clock
}

// DefaultConfig is a 10 s lock renewed every 3.3 s, with 1 s retries and a 1 s margin.
func DefaultConfig() Config {
	return ConfigForTTL(10 * time.Second)
}

// ConfigForTTL scales the defaults to another TTL.
func ConfigForTTL(ttl time.Duration) Config {
	return Config{TTL: ttl, RenewInterval: ttl / 3, RetryInterval: ttl / 10, SafetyMargin: ttl / 10}
}

// Validate checks the fields against each other.
func (c Config) Validate() error {
	switch {
	case c.TTL < 10*time.Millisecond:
		return fmt.Errorf("leader: TTL %v is too short (at least 10ms)", c.TTL)
	case c.SafetyMargin <= 0 || c.SafetyMargin >= c.TTL/2:
		return fmt.Errorf("leader: SafetyMargin %v must be above 0 and below TTL/2 (%v)", c.SafetyMargin, c.TTL/2)
	case c.RenewInterval <= 0 || c.RenewInterval > (c.TTL-c.SafetyMargin)/2:
		return fmt.Errorf("leader: RenewInterval %v must be above 0 and at most (TTL-SafetyMargin)/2 (%v), so one renewal may fail without losing leadership",
			c.RenewInterval, (c.TTL-c.SafetyMargin)/2)
	case c.RetryInterval <= 0:
		return fmt.Errorf("leader: RetryInterval %v must be above 0", c.RetryInterval)
	}
	return nil
}
