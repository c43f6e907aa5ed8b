package alternatives

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/redcrawl/crawler/dedup"
)

// The filter's other use, against cache penetration: requests for keys
// that never existed miss the cache every time and each goes to the
// database. A filter of every key that exists answers "never existed"
// for nearly all of them without the trip; what it gets wrong (its
// false-positive rate) still goes, so the database sees that share of
// them, and never misses a key that exists.

// ErrNeverExisted: the filter has never seen the key.
var ErrNeverExisted = errors.New("never existed")

// Guarded is a database behind a filter of its keys.
type Guarded struct {
	Filter *dedup.Filter
	DB     func(key string) (string, bool) // the slow lookup
	Trips  atomic.Int64                    // lookups that reached DB
}

// Get reads key from the database unless the filter says it never
// existed.
func (g *Guarded) Get(ctx context.Context, key string) (string, error) {
	seen, err := g.Filter.Contains(ctx, []string{key})
	if err != nil {
		return "", err
	}
	if !seen[0] {
		return "", ErrNeverExisted
	}
	g.Trips.Add(1)
	if v, ok := g.DB(key); ok {
		return v, nil
	}
	return "", ErrNeverExisted // a false positive: the trip was wasted
}
