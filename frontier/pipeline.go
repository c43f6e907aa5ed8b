package frontier

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redis/go-redis/v9"
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
	now := f.now()
	parts, handed := f.cross.plan(done, back, want, now)
	f.run(ctx, parts)
	return f.cross.settle(parts, done, handed, want, now)
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

	call     *dedup.Call // exchange.lua: the links queued, the exchange counted
	ends     *afterCall  // finish.lua: the leases ended, their pages recorded (none without pages)
	giveBack *backCall   // back.lua: leases given back, late URLs asked again, tokens refunded (none without any)
	handout  *afterCall  // handout.lua: the URLs granted, with their tokens
	take     *afterCall  // take.lua: the URLs granted taken and leased (none for no URL)
	ids      []string
	offset   []int
	outboxID string
	x        Exchanged
	offered  []bool // per offer: new to the crawl
	pre      []bool // the flags of the links offered before the pipeline (all but its call's batch)
	bad      []Finished
	queued   bool // call was queued once
	err      error
}

type linkRef struct{ page, link int }

func (p *part) used() bool {
	return len(p.done) > 0 || len(p.back) > 0 || len(p.offers) > 0 || len(p.acks) > 0 || p.pop > 0
}

// run makes the parts' calls, in one pipeline, and leaves in each what it
// did (x, offered) or its error.
func (f *Frontier) run(ctx context.Context, parts []*part) {
	for sh, p := range parts {
		if !p.used() {
			continue
		}
		sf := f.fs[sh]
		sf.xmu.Lock()
		defer sf.xmu.Unlock()
		if p.err = sf.prepare(ctx, p); p.err != nil {
			p.err = f.in(sh, p.err)
		}
	}
	sent, got := execParts(ctx, f.c, f.fs[0].o.now, parts)
	for sh, p := range parts {
		if !p.used() || p.err != nil {
			continue
		}
		sf := f.fs[sh]
		if p.err = sf.finish(ctx, p, sent, got); p.err == nil && len(p.bad) > 0 {
			// Popped items that are not ours to read: parked on the failed list.
			_, _, p.err = sf.exchange(ctx, p.bad, nil, 0)
		}
		if p.err != nil {
			p.err = f.in(sh, p.err)
		}
	}
}

// execParts sends the calls of the prepared parts (those without an
// error) in one pipeline, and returns the times before and after them
// by now: new leases are surely held until sent + Lease, and Redis's now
// was got at the latest. Redis without the scripts (a restart, a flush,
// the crawl's first call) has them loaded once, and the calls go again in
// one pipeline, not one by one.
func execParts(ctx context.Context, c redis.UniversalClient, now func() time.Time, parts []*part) (sent, got time.Time) {
	ready := func(p *part) bool { return p.call != nil && p.err == nil }
	pipe := c.Pipeline()
	for _, p := range parts {
		if ready(p) {
			p.queue(ctx, pipe)
		}
	}
	sent = now()
	pipe.Exec(ctx) // each call's error is its own: read by finish
	var again []*part
	for _, p := range parts {
		if ready(p) && p.noScript() {
			again = append(again, p)
		}
	}
	if len(again) > 0 && loadExchange(ctx, c) == nil {
		pipe = c.Pipeline()
		for _, p := range again {
			p.queue(ctx, pipe)
		}
		pipe.Exec(ctx)
	}
	return sent, now()
}

// queue adds p's calls to pipe: exchange.lua, finish.lua, back.lua,
// handout.lua and take.lua (whichever have yet to run, when they go again
// for want of their scripts). After an exchange.lua that did not run, the
// others were refused and go again; after a handout that did not run, the
// take found no grant and goes again. (A handout that ran does not go again after an
// back.lua that goes again: it would grant twice; it counted the late
// URLs still held as kept, which at worst asks for fewer URLs this once.)
func (p *part) queue(ctx context.Context, pipe redis.Pipeliner) {
	first := !p.queued || p.call.NoScript()
	if first {
		p.call.Queue(ctx, pipe)
	}
	p.queued = true
	if p.ends != nil && (first || p.ends.noScript()) {
		p.ends.queue(ctx, pipe)
	}
	if p.giveBack != nil && (first || p.giveBack.noScript()) {
		p.giveBack.queue(ctx, pipe)
	}
	granted := first || p.handout.noScript()
	if granted {
		p.handout.queue(ctx, pipe)
	}
	if p.take != nil && (granted || p.take.noScript()) {
		p.take.queue(ctx, pipe)
	}
}

// noScript: Redis had not one of p's scripts when its pipeline ran.
func (p *part) noScript() bool {
	return p.call.NoScript() || p.ends.noScript() || p.giveBack != nil && p.giveBack.noScript() || p.handout.noScript() || p.take.noScript()
}

// loadExchange loads an exchange's five scripts, in one round trip (a
// master: on a Cluster each master loads them). (Not by Script.Load on a
// pipeline: it takes the reply, not yet there, for the script's hash.)
func loadExchange(ctx context.Context, c redis.UniversalClient) error {
	load := func(ctx context.Context, c *redis.Client) error {
		pipe := c.Pipeline()
		pipe.ScriptLoad(ctx, lua.Source("exchange"))
		pipe.ScriptLoad(ctx, lua.Source("finish"))
		pipe.ScriptLoad(ctx, lua.Source("back"))
		pipe.ScriptLoad(ctx, lua.Source("handout"))
		pipe.ScriptLoad(ctx, lua.Source("take"))
		_, err := pipe.Exec(ctx)
		return err
	}
	switch c := c.(type) {
	case *redis.Client:
		return load(ctx, c)
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, load)
	}
	for _, s := range []*redis.Script{exchangeScript, finishScript, backScript, handoutScript, takeScript} {
		if err := s.Load(ctx, c).Err(); err != nil {
			return err
		}
	}
	return nil
}

// prepare makes p's calls (f.xmu held). Links beyond one Bloom batch are
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
	// Links beyond one call's batch go first, offered in calls of their
	// own (counted as one exchange), as ExecBatch's earlier calls would:
	// the pipeline's call carries the last batch, and counts what those
	// found new in their pages'.
	var pre []bool
	start := 0
	if n, most := len(urls), f.seen.MaxBatch(); n > most {
		start = n - ((n-1)%most + 1)
		if pre, err = f.offer(ctx, urls[:start], payload[:start], nil); err != nil {
			return err
		}
	}
	p.ids = make([]string, p.pop)
	for i := range p.ids {
		p.ids[i] = f.leaseID()
	}
	a := f.endArgs(p.done, p.offset, start, pre)
	for d := range a.Done {
		if p.away[d] {
			a.Done[d][dFlags] |= doneAway
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
	p.pre = pre
	la := f.linksArgs(p.done, p.offset, start, len(urls))
	la.Acks = p.acks
	p.call, err = f.seen.NewCall(exchangeScript, urls[start:], payload[start:], f.exchangeKeys(), la.encode())
	p.ends = f.newEnd(a)
	p.giveBack, p.handout, p.take = f.newBack(p.back, a.refunds()), f.newHandout(p.pop, lateOf(p.back)), f.newTake(p.ids)
	return err
}

// finish reads p's calls' replies (f.xmu held): what they did goes in
// p.x and p.offered, the popped items it could not decode in p.bad.
func (f *shard) finish(ctx context.Context, p *part, sent, got time.Time) error {
	flags, tail, err := p.call.Result(ctx)
	if err = f.counted(tail, err); err != nil {
		return err
	}
	flags = append(p.pre[:len(p.pre):len(p.pre)], flags...) // the links offered first, then the call's
	ended, err := p.ends.result(ctx, f)
	if err != nil {
		return err
	}
	var again []any
	if p.giveBack != nil {
		if again, err = p.giveBack.result(ctx, f); err != nil {
			return err
		}
	}
	granted, err := p.handout.result(ctx, f)
	if err != nil {
		return err
	}
	taken, err := p.take.result(ctx, f)
	if err != nil {
		return err
	}
	var back []*Lease
	if p.giveBack != nil {
		back = p.giveBack.back
	}
	x, bad, err := f.readReply(flags, ended, again, granted, taken, p.offset, p.ids, back)
	if err != nil {
		return err
	}
	p.offered = flags[p.offset[len(p.done)]:]
	x.windows(sent, got, f.o.Lease)
	p.x, p.bad = x, bad
	return nil
}
