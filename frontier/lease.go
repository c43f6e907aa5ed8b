package frontier

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"
)

// Lease is a popped item held by one worker.
type Lease struct {
	ID   string
	Item Item
	Host string
	raw  string
	// now is the clock Left reads (the frontier's Options.Clock; nil: the
	// process's own, time.Now).
	now func() time.Time
	// HostDelay is the host's own least interval between requests
	// (Hosts.SetDelay) that its pop kept to; 0 when it had none, and the
	// crawl's rate held.
	HostDelay time.Duration
	// OwnRate is the host's own rate (requests a second, 0: no limit) that
	// its pop kept to instead of the crawl's, when HasOwnRate
	// (Hosts.SetRule).
	OwnRate    float64
	HasOwnRate bool
	// freshAt: the tat its pop left the host's bucket (ms, Redis's clock,
	// as the reply said) when the bucket was full before it (hostdelay.lua).
	freshAt string
	// NotBefore and Deadline are its host's token's window
	// (politeness.TokenWindow), by this process's clock: its request may go
	// from NotBefore until before Deadline. Redis's clock is read as the
	// reply's arrival, so a request is never early by Redis's clock, and
	// late by at most the call's duration. A zero Deadline: no token (the
	// host has no limit), no end.
	NotBefore, Deadline time.Time
	opens, closes       time.Duration // the window as the reply said it, from Redis's now (closes < 0: none)
	// grant is its token's slot by Redis's clock (µs; 0: unknown, or no
	// token): a refund gives the token back only while it is its host's
	// last.
	grant int64
	// addr is the server address whose bucket gave its token too
	// (Policy.PerAddress; "" for none): a refund gives that token back
	// as well, by the same rule.
	addr string
	// Late, set on a lease given back (Exchange's back) because its
	// token's window closed before its request could go: the exchange
	// asks its host for a new token first, by the pop's own rule at
	// Redis's now. With one, the lease is kept and comes back in
	// Exchanged.Again under the new token's window; without, it goes back
	// as any lease given back.
	Late bool

	// until is the local deadline of the lease, on this process's
	// monotonic clock (nanoseconds since clock0): the moment the call that
	// granted or last renewed it was sent, plus the lease length. Redis
	// set its own deadline no earlier (its clock read the call after it
	// was sent), so before until the lease is surely held. lost: a
	// heartbeat found it no longer held.
	until atomic.Int64
	lost  atomic.Bool
}

// token sets the lease's token as a reply gives it: µs from Redis's now
// (nowUs, a string) to its slot and to when its window opens and closes
// (until < 0: no token, the host has no limit).
func (l *Lease) token(nowUs string, slot, from, until int64) {
	l.opens, l.closes = time.Duration(from)*time.Microsecond, time.Duration(until)*time.Microsecond
	l.grant = 0
	if now, err := strconv.ParseInt(nowUs, 10, 64); err == nil && until >= 0 {
		l.grant = now + slot
	}
}

// window sets the token's window, from the reply's arrival at got.
func (l *Lease) window(got time.Time) {
	l.NotBefore = got.Add(l.opens)
	if l.closes >= 0 {
		l.Deadline = got.Add(l.closes)
	}
}

// clock0 is where lease deadlines are measured from: time.Since reads the
// monotonic clock, which a wall-clock step does not move.
var clock0 = time.Now()

// granted records that a call sent at sent gave or renewed the lease for d.
func (l *Lease) granted(sent time.Time, d time.Duration) {
	t := int64(sent.Sub(clock0) + d)
	for {
		old := l.until.Load()
		if old >= t || l.until.CompareAndSwap(old, t) {
			return
		}
	}
}

// Left is how long the lease is surely still held, by the local clock: 0
// or less once it may have lapsed (a process paused or cut off from Redis
// past it), or when a heartbeat found it lost. A lease never granted
// through Exchange (a test's) reports a full lease's time.
func (l *Lease) Left() time.Duration {
	if l.lost.Load() {
		return 0
	}
	u := l.until.Load()
	if u == 0 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(u) - l.clock().Sub(clock0)
}

// clock is now on the lease's clock (its process's: Options.Clock).
func (l *Lease) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

// Member is the lease as the leases sorted set holds it: its id and its
// entry ("id\nhost\nitem-json"), so that a lease carries its item and one
// structure tells both what is held and until when.
func (l *Lease) Member() string { return l.ID + "\n" + l.Host + "\n" + l.raw }

// leaseID returns an id no other pop anywhere will use: this process's
// random prefix and a counter.
func (f *shard) leaseID() string {
	return f.idPrefix + strconv.FormatUint(f.idSeq.Add(1), 36)
}

// failedEntry is the lease's item as the failed list keeps it: with its
// reason, and the raw entry as its URL when it could not be decoded.
func (l *Lease) failedEntry(reason string) string {
	item := l.Item
	if item.URL == "" {
		item = Item{URL: l.raw}
	}
	item.Err = reason
	b, _ := json.Marshal(item) // strings and ints only: cannot fail
	return string(b)
}

// FirstRequestWithin is how soon a URL popped before its host's
// Crawl-delay was known, and then let go as the host's first request
// (Hosts.SetDelay), must go: its host's next token comes a delay after
// that, so that the two requests are a delay apart however long the
// first took to leave (a call's round trip, a loaded machine). Past it,
// the URL goes back and is popped again under the delay.
const FirstRequestWithin = 100 * time.Millisecond

// HostDelayKept is how long a host's bucket keeps its own delay
// (Hosts.SetDelay) after its last request: as long as a robots.txt is cached
// (politeness.Robots's TTL), after which the next fetch of it says again.
const HostDelayKept = 24 * time.Hour

// Hosts.SetDelay keeps host's own least interval between requests (its
// robots.txt's Crawl-delay; 0: none) in its token bucket, which every pop
// reads from then on. With l, a URL of host popped before its pop kept to
// that interval, it decides l: true when l may be fetched now (its bucket
// has a token at the interval, taken; or l's grant was the only one the
// bucket remembers), false when it must go back: the caller's next
// exchange requeues it (Requeue, after the delay), for a lease ends only
// in an exchange (ErrLeaseLost: it was no longer held).
func (f *shard) SetHostDelay(ctx context.Context, host string, delay time.Duration, l *Lease) (bool, error) {
	member, at := "", ""
	if l != nil {
		member, at = l.Member(), l.freshAt
	}
	start := time.Now()
	if l != nil {
		start = l.clock() // its deadline is read on the clock its fetch loop reads
	}
	n, err := hostDelayScript.Run(ctx, f.c, []string{f.keys.Buckets + host, f.keys.Leases, f.keys.Ready, f.keys.Slowed, f.keys.Refill, f.keys.Queues},
		delay.Milliseconds(), HostDelayKept.Milliseconds(), member, at, host, FirstRequestWithin.Milliseconds()).Int()
	switch {
	case err != nil:
		return false, fmt.Errorf("frontier: host delay: %w", err)
	case n == 0:
		return false, ErrLeaseLost
	}
	if n == 2 && l != nil {
		// Its request goes by the deadline or goes back (the token's
		// window, as a late token's): the host's next token comes a delay
		// after that.
		if by := start.Add(FirstRequestWithin); l.Deadline.IsZero() || by.Before(l.Deadline) {
			l.Deadline = by
		}
	}
	return n == 2, nil
}

// retoken sets l's window and token to the new one its host gave it in
// an exchange (handout.lua's again): µs from Redis's now (nowUs) to its
// slot and its window's ends.
func (l *Lease) retoken(nowUs string, slot, from, until int64) {
	l.token(nowUs, slot, from, until)
	l.freshAt = "" // the pop's tat is no longer the host's (hostdelay.lua)
	l.NotBefore, l.Deadline = time.Time{}, time.Time{}
}
