package frontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/dedup"
)

// Exchange is Frontier.Exchange over the shards: one call a shard it
// touches, all in one pipeline (on one Redis one round trip; on a Cluster
// one a master, in parallel). A shard's call ends the leases of its pages
// (done and back may mix shards), queues their links to its own hosts and
// the links of other shards' pages to its hosts (offers), and pops its
// share of want; the shards asked for URLs are those not idle, starting
// from a turn that moves on each time, about popShare URLs a shard.
//
// The calls of a pipeline are each atomic, not together: a page's lease
// may end in its shard while the call that offers its links to another
// shard fails, or never runs (the worker died). So the page's record and
// those links wait in its shard's outbox (the transactional outbox): one
// entry per call, written in the same step as the leases end. Once every
// offer it depends on went through, the next exchange acks the entry in
// its call to that shard, which adds the records to the results stream
// (their new_links counting what the offers found new) and deletes it. An
// entry no ack came for in OutboxAge, the scheduler's sweep delivers:
// offers the links again (an offer is idempotent: the Bloom filter knows
// what was queued) and acks it. A shard with an entry waiting is not
// empty, so the crawl does not end before its links are queued.
//
// If a call that ends leases fails, the Exchange fails (the exchanger
// sends the batch again: leases that did end answer as recorded); URLs
// popped by the calls that went through are handed out with the next
// exchange. A shard asked only for URLs or offers that fails is reported
// in Unasked (and Forget), and its offers wait in the outbox.
func (f *Frontier) Exchange(ctx context.Context, done []Finished, back []*Lease, want int) (Exchanged, error) {
	if err := f.opened(); err != nil {
		return Exchanged{}, err
	}
	if len(f.fs) == 1 {
		return f.fs[0].Exchange(ctx, done, back, want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := Exchanged{Queued: make([][]bool, len(done)), Held: make([]bool, len(done))}
	out.Info.NextDue = -1
	wanted := want
	// URLs popped by an exchange that failed: handed out first; those not
	// wanted now go back.
	n := min(want, len(f.spare))
	out.Popped = append(out.Popped, f.spare[:n]...)
	back = append(back[:len(back):len(back)], f.spare[n:]...)
	f.spare = nil
	want -= n

	parts := f.split(done, back)
	now := f.now()
	f.sharePops(parts, want, now)
	f.turn = (f.turn + 1) % len(f.fs)
	f.run(ctx, parts)

	homeErr := f.collect(parts, done, &out, now)
	if f.queueAcks(parts) && len(out.Popped) == 0 {
		// An idle worker's records wait for its next exchange: it is due
		// now, rather than when a shard has URLs again. (Only for acks new
		// from this exchange: those of a shard that failed wait as long as
		// its URLs would.)
		out.Info.NextDue = 0
	}
	if homeErr != nil {
		f.spare = out.Popped
		return Exchanged{}, homeErr
	}
	if len(out.Popped) < wanted && out.Info.NextDue < 0 {
		// Every shard asked was empty; those not asked are idle: the
		// earliest of them is when to look again.
		for sh, t := range f.idle {
			if wait := max(t.Sub(now), 0); parts[sh].pop == 0 && (out.Info.NextDue < 0 || wait < out.Info.NextDue) {
				out.Info.NextDue = wait
			}
		}
	}
	return out, nil
}

// collect adds what the parts' calls did to out, and returns the error of
// a call that ended leases (the worst, should several fail): a call that
// failed otherwise is reported in out (Unasked, Forget), its acks kept for
// the next exchange.
func (f *Frontier) collect(parts []*part, done []Finished, out *Exchanged, now time.Time) error {
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
			out.Unasked = f.in(sh, p.err)
		}
		if p.err != nil {
			// Sent again next time; beyond maxAcks, the oldest are left to
			// the scheduler's sweep, which delivers them all the same.
			f.acks[sh] = append(p.acks, f.acks[sh]...)
			f.acks[sh] = f.acks[sh][max(0, len(f.acks[sh])-maxAcks):]
			continue
		}
		for j, d := range p.at {
			out.Held[d] = p.x.Held[j]
			out.Queued[d] = make([]bool, len(done[d].Outcome.Children))
			for k, i := range p.ownIdx[j] {
				out.Queued[d][i] = p.x.Queued[j][k]
			}
		}
		f.merge(out, sh, p.x, now, p.pop)
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

// Flush sends the acks of the last exchange's outbox entries (a stopping
// worker's last word; without it, the scheduler delivers them after
// OutboxAge) and gives back URLs a failed exchange left for the next.
func (f *Frontier) Flush(ctx context.Context) error {
	if len(f.fs) == 1 {
		return nil
	}
	_, err := f.Exchange(ctx, nil, nil, 0)
	return err
}

// popShare is about how many URLs an exchange asks of one shard: fewer
// shards asked for more each, so that a call's fixed cost is shared out
// among many URLs.
const popShare = 32

// part is one shard's share of an Exchange, and then what its call did.
type part struct {
	done    []Finished // pages whose leases end here, with only their links to this shard's hosts
	at      []int      // their places in the Exchange's done
	ownIdx  [][]int    // per page, where its links here were among its links
	away    []bool     // per page: it has links to other shards' hosts
	back    []*Lease
	offers  []Item    // links of other shards' pages to this shard's hosts
	offerAt []linkRef // where each was
	outbox  []awayLink
	acks    []outboxAck
	pop     int

	call     *dedup.Call
	ids      []string
	offset   []int
	outboxID string
	x        Exchanged
	offered  []bool // per offer: new to the crawl
	pre      []bool // the links' flags, when they were offered before the pipeline
	err      error
}

type linkRef struct{ page, link int }

func (p *part) used() bool {
	return len(p.done) > 0 || len(p.back) > 0 || len(p.offers) > 0 || len(p.acks) > 0 || p.pop > 0
}

// split shares done, back and the acks due out among the shards.
func (f *Frontier) split(done []Finished, back []*Lease) []*part {
	parts := make([]*part, len(f.fs))
	for sh := range parts {
		parts[sh] = &part{acks: f.acks[sh]}
		f.acks[sh] = nil
	}
	for d, fin := range done {
		h := f.Home(fin.Lease)
		p := parts[h]
		own := fin
		own.Outcome.Children = nil
		var idx []int
		away := false
		for i, ch := range fin.Outcome.Children {
			sh := h
			if host, err := hostOf(ch.URL); err == nil {
				sh = ShardOf(host, len(f.fs))
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
		p := parts[f.Home(l)]
		p.back = append(p.back, l)
	}
	return parts
}

// sharePops shares want out among the shards not idle: every shard the
// exchange calls anyway (asking it costs no call), and more in turn from
// f.turn while a shard's share would be above popShare.
func (f *Frontier) sharePops(parts []*part, want int, now time.Time) {
	if want <= 0 {
		return
	}
	var called, others []int
	for k := range f.fs {
		sh := (f.turn + k) % len(f.fs)
		switch {
		case f.idle[sh].After(now):
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

// run makes the parts' calls, in one pipeline, and leaves in each what it
// did (x, offered) or its error.
func (f *Frontier) run(ctx context.Context, parts []*part) {
	pipe := f.fs[0].c.Pipeline()
	for sh, p := range parts {
		if !p.used() {
			continue
		}
		sf := f.fs[sh]
		sf.xmu.Lock()
		defer sf.xmu.Unlock()
		if p.err = sf.prepare(ctx, p); p.err != nil {
			p.err = f.in(sh, p.err)
			continue
		}
		p.call.Queue(ctx, pipe)
	}
	sent := f.fs[0].o.now() // before the calls: new leases are surely held until sent + Lease
	pipe.Exec(ctx)          // each call's error is its own: read below
	var again []*part
	for _, p := range parts {
		if p.call != nil && p.err == nil && p.call.NoScript() {
			again = append(again, p)
		}
	}
	if len(again) > 0 && exchangeScript.Load(ctx, f.c).Err() == nil {
		// Redis had no script (a restart, a flush, the crawl's first call):
		// loaded once, the calls go again in one pipeline, not one by one.
		pipe = f.c.Pipeline()
		for _, p := range again {
			p.call.Queue(ctx, pipe)
		}
		pipe.Exec(ctx)
	}
	got := f.fs[0].o.now() // after the calls: Redis's now, in this process's clock, at the latest
	for sh, p := range parts {
		if !p.used() || p.err != nil {
			continue
		}
		if p.err = f.fs[sh].finish(ctx, p, sent, got); p.err != nil {
			p.err = f.in(sh, p.err)
		}
	}
}

// prepare makes p's call (f.xmu held). Links beyond one Bloom batch are
// offered first, in calls of their own before the pipeline (as
// ExecBatch's earlier calls would be), and counted in their pages'.
func (f *shard) prepare(ctx context.Context, p *part) error {
	var urls []string
	var payload []any
	p.offset = make([]int, len(p.done)+1)
	for d, x := range p.done {
		u, e, err := backEntries(x.Outcome.Children)
		if err != nil {
			return err
		}
		urls, payload = append(urls, u...), append(payload, e...)
		p.offset[d+1] = len(urls)
	}
	u, e, err := backEntries(p.offers)
	if err != nil {
		return err
	}
	urls, payload = append(urls, u...), append(payload, e...)
	var pre []bool
	if len(urls) > f.seen.MaxBatch() {
		if pre, err = f.offer(ctx, urls, payload, nil); err != nil {
			return err
		}
		urls, payload = nil, nil
	}
	p.ids = make([]string, p.pop)
	for i := range p.ids {
		p.ids[i] = f.leaseID()
	}
	off := p.offset
	if pre != nil {
		off = make([]int, len(p.offset)) // the call carries no links
	}
	a := f.lastArgs(p.done, off, 0, len(urls), nil, p.back, p.pop, p.ids)
	for d := range a.Done {
		if p.away[d] {
			a.Done[d][dFlags] |= doneAway
		}
		for i := p.offset[d]; pre != nil && i < p.offset[d+1]; i++ {
			if pre[i] {
				a.Done[d][dCounted]++
			}
		}
	}
	if len(p.outbox) > 0 {
		b, err := json.Marshal(p.outbox)
		if err != nil {
			return fmt.Errorf("frontier: outbox: %w", err)
		}
		p.outboxID = f.leaseID()
		a.OutboxID, a.Outbox = p.outboxID, a.text(string(b))
	}
	a.Acks = p.acks
	p.pre = pre
	p.call, err = f.seen.NewCall(exchangeScript, urls, payload, f.exchangeKeys(), a.encode())
	return err
}

// finish reads p's call's reply (f.xmu held): what it did goes in p.x and
// p.offered.
func (f *shard) finish(ctx context.Context, p *part, sent, got time.Time) error {
	flags, tail, err := p.call.Result(ctx)
	if err = f.counted(tail, err); err != nil {
		return err
	}
	if p.pre != nil {
		flags = p.pre
	}
	x, bad, err := f.readReply(flags, tail, p.offset, p.ids)
	if err != nil {
		return err
	}
	p.offered = flags[p.offset[len(p.done)]:]
	for _, l := range x.Popped {
		l.granted(sent, f.o.Lease)
		l.window(got)
	}
	p.x = x
	if len(bad) > 0 {
		// Popped items that are not ours to read: parked on the failed list.
		_, _, err = f.exchange(ctx, bad, nil, 0)
	}
	return err
}
