// Package keyspace is what every part of a crawl's state in Redis stands on:
// its keys, laid out over shards by host (each shard's under a hash tag of
// its own, which a Redis Cluster may place on any master), the client, and
// what a script's reply means (errors.go, reply.go), and how every key of
// a crawl is found and deleted (scan.go). The parts of a crawl's state
// beside its queue are each made of a Set: the controls of single hosts
// (frontier/perhost), of the whole crawl (frontier/control), the roll of
// workers (frontier/registry), the recrawl schedule (frontier/recrawl),
// the payload index (frontier/payloads) and what render workers share
// (frontier/rendering).
package keyspace

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Set is a crawl's shards, as the types that keep its state use them.
type Set struct {
	Name string                // the crawl's
	C    redis.UniversalClient // the client of every shard (one Redis, or a Cluster)
	Keys []Keys                // shard i's keys; at least one
	// Instance is the crawl's instance id as this process read it
	// (frontier.Options.Instance): scripts that write refuse a call
	// carrying another, as a gone crawl's (ErrGone).
	Instance string
	// Now is the process's clock.
	Now func() time.Time
	// Pace is the crawl's pace in force (frontier.Policy's, which
	// 'crawler set' changes), read at each call that needs it.
	Pace func() Pace
}

// Pace is what a host's tokens come by: each host's requests a second
// (0: no limit) and its bucket's size, and whether hosts that resolve to
// one address share its bucket too.
type Pace struct {
	HostRate   float64
	HostBurst  int
	PerAddress bool
}

// ShardOf is the shard of host among n.
func ShardOf(host string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(host))
	return int(h.Sum32() % uint32(n))
}

// For is host's shard in s and that shard's keys.
func (s *Set) For(host string) (int, Keys) {
	i := ShardOf(host, len(s.Keys))
	return i, s.Keys[i]
}

// In names shard i in err, when there is more than one.
func (s *Set) In(i int, err error) error { return In(len(s.Keys), i, err) }

// In names shard i of n in err, when n is more than one.
func In(n, i int, err error) error {
	if n == 1 || err == nil {
		return err
	}
	return fmt.Errorf("shard %d: %w", i, err)
}

// The lanes a host's URLs are popped in (queue.lua's lanes): a host of the
// render lane is popped only by workers with a browser, and its tokens are
// the same whichever lane takes them.
const (
	LanePlain  = "plain"
	LaneRender = "render"
)

// ErrGone: the crawl's config is gone (reset, or Redis lost its data);
// nothing was written. A user reads it as it is: no package prefix.
var ErrGone = errors.New("the crawl is gone from Redis")

// ErrName: a crawl name outside the safe alphabet (CheckName).
var ErrName = errors.New("invalid crawl name")

// ErrScript: a frontier script cannot do what it was asked, and trying
// again would not change that: it refused before its first write, because
// a number it rests on is not one (CORRUPT: set by hand, or by a bug) or
// the Redis user may not run a command it needs (NOPERM), or it failed
// half-way (a bug, or a key of the wrong kind). Never a lost reply: the
// worker stops, saying which key and what, and the URLs it holds come back
// when their leases expire.
var ErrScript = errors.New("frontier: a script cannot run")

// IsGone reports whether a script refused because the crawl is gone: its
// error reply begins "GONE", the one way every script of the crawl says so
// (exchange.lua turns its Bloom guard's refusal into that error).
func IsGone(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "GONE")
}

// Flag is a boolean as a script's argument: "1" or "0".
func Flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
