package frontier

import (
	"errors"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/registry"
)

// The frontier's errors, in one place. Those a user reads as they are
// (ErrGone, ErrName: the CLI prints them after the flag or the crawl they
// name) carry no package prefix; the others do.
var (
	// ErrGone: the crawl's config is gone (reset, or Redis lost its data);
	// nothing was written.
	ErrGone = keyspace.ErrGone

	// ErrIDInUse: a live worker is registered under the id already
	// (registry.ErrIDInUse).
	ErrIDInUse = registry.ErrIDInUse

	// ErrLeaseLost: the item's lease ran out and the scheduler took it back.
	ErrLeaseLost = errors.New("frontier: lease lost")

	// ErrRolledBack: Redis does not hold all of this process's past exchanges
	// (it restarted from an older snapshot, failed over to a replica that
	// lagged, or the reply of an exchange it did apply was lost). Nothing was
	// written. What the process learned from its exchanges — which links are
	// already seen — can no longer be trusted; once it has forgotten that, it
	// sends the same exchange again, which Redis now accepts.
	ErrRolledBack = errors.New("frontier: Redis no longer holds this worker's past exchanges (restored from an older state?)")

	// ErrReplyLost: Redis holds more of this process's exchanges than the
	// process knows of: one whose reply it never got (a timeout, a connection
	// cut) went through. Nothing was written by this call; sent again, the
	// same exchange records nothing twice (its pages' leases are found ended
	// by it, keyspace.Keys.EndedBy), so there is nothing to forget.
	ErrReplyLost = errors.New("frontier: an exchange whose reply was lost had gone through")

	// ErrName: a crawl name outside the safe alphabet.
	ErrName = keyspace.ErrName

	// ErrScript: a frontier script cannot do what it was asked, and trying
	// again would not change that (keyspace.ErrScript).
	ErrScript = keyspace.ErrScript
)

// ScriptError is an ErrScript with what Redis said.
type ScriptError = keyspace.ScriptError
