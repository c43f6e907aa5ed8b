package frontier

import (
	"errors"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
)

// crossing is what an exchange over several shards keeps from one call to
// the next, and what it decides on it, with no I/O (Frontier.Exchange:
// plan, then the calls, then settle): the shard the next pop starts from
// (turn), the shards not to ask for a while (idle), the acks owed to each
// shard's outbox (acks), and URLs a failed exchange popped (spare). A
// table test steps it through calls that fail (crossing_test.go).
type crossing struct {
	n    int         // shards
	turn int         // the shard the next pop starts from
	idle []time.Time // a shard that popped nothing is not asked before this
	// acks are, per shard, the outbox entries whose offers went through,
	// sent with the next exchange's call there; spare are URLs popped by
	// an exchange that failed in another shard, handed out with the next.
	acks  [][]outboxAck
	spare []*Lease
}

func newCrossing(n int) *crossing {
	return &crossing{n: n, idle: make([]time.Time, n), acks: make([][]outboxAck, n)}
}

// plan is an exchange's first step: the spare URLs handed out first (those
// not wanted now go back), then done, back and the acks due shared out
// among the shards, and what is still wanted among those not idle. It
// returns the parts to call and the URLs handed out already.
func (c *crossing) plan(done []Finished, back []*Lease, want int, now time.Time) ([]*part, []*Lease) {
	n := min(want, len(c.spare))
	handed := c.spare[:n:n]
	back = append(back[:len(back):len(back)], c.spare[n:]...)
	c.spare = nil
	parts := c.split(done, back)
	c.sharePops(parts, want-n, now)
	c.turn = (c.turn + 1) % c.n
	return parts, handed
}

// settle is an exchange's last step: what the parts' calls did (each
// part's x, offered or err), added up for the caller after the URLs
// handed already; the acks of this exchange's outbox entries kept for the
// next; and, should a call that ended leases fail, its error, and every
// URL popped kept for the next exchange (spare). wanted is the
// exchange's want.
func (c *crossing) settle(parts []*part, done []Finished, handed []*Lease, wanted int, now time.Time) (Exchanged, error) {
	out := Exchanged{Queued: make([][]bool, len(done)), Held: make([]bool, len(done)), Popped: handed}
	out.Info.NextDue = -1
	homeErr := c.collect(parts, done, &out, now)
	if c.queueAcks(parts) && len(out.Popped) == 0 {
		// An idle worker's records wait for its next exchange: it is due
		// now, rather than when a shard has URLs again. (Only for acks new
		// from this exchange: those of a shard that failed wait as long as
		// its URLs would.)
		out.Info.NextDue = 0
	}
	if homeErr != nil {
		c.spare = out.Popped
		return Exchanged{}, homeErr
	}
	if len(out.Popped) < wanted && out.Info.NextDue < 0 {
		// Every shard asked was empty; those not asked are idle: the
		// earliest of them is when to look again.
		for sh, t := range c.idle {
			if wait := max(t.Sub(now), 0); parts[sh].pop == 0 && (out.Info.NextDue < 0 || wait < out.Info.NextDue) {
				out.Info.NextDue = wait
			}
		}
	}
	return out, nil
}

// woken forgets that shard sh had nothing: a message on its wake channel
// says it has URLs again.
func (c *crossing) woken(sh int) { c.idle[sh] = time.Time{} }

// split shares done, back and the acks due out among the shards.
func (c *crossing) split(done []Finished, back []*Lease) []*part {
	parts := make([]*part, c.n)
	for sh := range parts {
		parts[sh] = &part{acks: c.acks[sh]}
		c.acks[sh] = nil
	}
	for d, fin := range done {
		h := keyspace.ShardOf(fin.Lease.Host, c.n)
		p := parts[h]
		own := fin
		own.Outcome.Children = nil
		var idx []int
		away := false
		for i, ch := range fin.Outcome.Children {
			sh := h
			if host, err := hostOf(ch.URL); err == nil {
				sh = keyspace.ShardOf(host, c.n)
			} // else: the home shard's call reports the bad URL
			if sh == h {
				own.Outcome.Children = append(own.Outcome.Children, ch)
				idx = append(idx, i)
				continue
			}
			away = true
			parts[sh].offers = append(parts[sh].offers, ch)
			parts[sh].offerAt = append(parts[sh].offerAt, linkRef{d, i})
			p.outbox = append(p.outbox, awayLink{D: len(p.done) + 1, Item: ch, to: sh, ref: linkRef{d, i}})
		}
		p.done, p.at, p.ownIdx, p.away = append(p.done, own), append(p.at, d), append(p.ownIdx, idx), append(p.away, away)
	}
	for _, l := range back {
		p := parts[keyspace.ShardOf(l.Host, c.n)]
		p.back = append(p.back, l)
	}
	return parts
}

// sharePops shares want out among the shards not idle: every shard the
// exchange calls anyway (asking it costs no call), and more in turn from
// c.turn while a shard's share would be above popShare.
func (c *crossing) sharePops(parts []*part, want int, now time.Time) {
	if want <= 0 {
		return
	}
	var called, others []int
	for k := range c.n {
		sh := (c.turn + k) % c.n
		switch {
		case c.idle[sh].After(now):
		case parts[sh].used():
			called = append(called, sh)
		default:
			others = append(others, sh)
		}
	}
	ask := append(called, others...)
	k := (want + popShare - 1) / popShare
	if len(called) == 0 {
		// A call for URLs alone (the fetch loops wait): one shard more, so
		// that one with nothing due now does not leave them waiting.
		k++
	}
	k = min(len(ask), k)
	for i, sh := range ask[:k] {
		parts[sh].pop = want / k
		if i < want%k {
			parts[sh].pop++
		}
	}
}

// collect adds what the parts' calls did to out, and returns the error of
// a call that ended leases (the worst, should several fail): a call that
// failed otherwise is reported in out (Unasked, Forget), its acks kept for
// the next exchange.
func (c *crossing) collect(parts []*part, done []Finished, out *Exchanged, now time.Time) error {
	var homeErr error
	for sh, p := range parts {
		switch {
		case !p.used():
		case p.err != nil && (len(p.done) > 0 || len(p.back) > 0):
			homeErr = worse(homeErr, p.err)
		case p.err != nil:
			if errors.Is(p.err, ErrGone) {
				homeErr = worse(homeErr, p.err)
			}
			out.Forget = out.Forget || errors.Is(p.err, ErrRolledBack)
			out.Unasked = keyspace.In(c.n, sh, p.err)
		}
		if p.err != nil {
			// Sent again next time; beyond maxAcks, the oldest are left to
			// the scheduler's sweep, which delivers them all the same.
			c.acks[sh] = append(p.acks, c.acks[sh]...)
			c.acks[sh] = c.acks[sh][max(0, len(c.acks[sh])-maxAcks):]
			continue
		}
		for j, d := range p.at {
			out.Held[d] = p.x.Held[j]
			out.Queued[d] = make([]bool, len(done[d].Outcome.Children))
			for k, i := range p.ownIdx[j] {
				out.Queued[d][i] = p.x.Queued[j][k]
			}
		}
		c.merge(out, sh, p.x, now, p.pop)
	}
	for _, p := range parts { // the offers' answers, once every page has its slice
		if p.err != nil {
			continue
		}
		for k, r := range p.offerAt {
			if out.Queued[r.page] != nil { // (nil: its own shard's call failed)
				out.Queued[r.page][r.link] = p.offered[k]
			}
		}
	}
	return homeErr
}

// merge adds shard sh's exchange x, asked for pop URLs, to out. A shard
// not asked for any tells nothing of what it has queued.
func (c *crossing) merge(out *Exchanged, sh int, x Exchanged, now time.Time, pop int) {
	out.Popped = append(out.Popped, x.Popped...)
	out.Again = append(out.Again, x.Again...)
	out.Info.Pages += x.Info.Pages
	out.Info.CrawlOver = out.Info.CrawlOver || x.Info.CrawlOver
	out.Info.Paused = out.Info.Paused || x.Info.Paused
	out.Info.Settings = max(out.Info.Settings, x.Info.Settings)
	out.Info.Resolve = append(out.Info.Resolve, x.Info.Resolve...)
	if pop == 0 {
		return
	}
	switch {
	case c.n == 1:
		// Nothing else to ask: the one shard is asked every time, and the
		// caller waits for NextDue (or a wake) before it asks again.
	case len(x.Popped) == 0:
		wait := x.Info.NextDue
		if wait < 0 {
			wait = idleFor
		}
		c.idle[sh] = now.Add(wait)
	default:
		c.idle[sh] = time.Time{}
	}
	if x.Info.NextDue >= 0 && (out.Info.NextDue < 0 || x.Info.NextDue < out.Info.NextDue) {
		out.Info.NextDue = x.Info.NextDue
	}
}

// queueAcks records, for the next exchange, the outbox entries of this
// one whose offers all went through, with what they found new, and says
// whether it found any.
func (c *crossing) queueAcks(parts []*part) bool {
	queued := false
	for sh, p := range parts {
		if p.err != nil || p.outboxID == "" {
			continue
		}
		recorded := false
		for j := range p.done {
			recorded = recorded || p.away[j] && p.x.recordedNow[j]
		}
		if !recorded {
			continue // no page was recorded now: no entry was written
		}
		ack := outboxAck{ID: p.outboxID, Extra: make([]int, len(p.done))}
		delivered := true
		for _, l := range p.outbox {
			if parts[l.to].err != nil {
				delivered = false
				break
			}
		}
		if !delivered {
			continue // the scheduler delivers it
		}
		for _, l := range p.outbox {
			to := parts[l.to]
			for k, r := range to.offerAt {
				if r == l.ref && to.offered[k] {
					ack.Extra[l.D-1]++
				}
			}
		}
		c.acks[sh] = append(c.acks[sh], ack)
		queued = true
	}
	return queued
}
