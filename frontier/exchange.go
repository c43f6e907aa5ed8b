package frontier

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/politeness"
)

// PopInfo rides along with every pop.
type PopInfo struct {
	Pages     int64 // pages fetched so far in the whole crawl (with PageBudget)
	CrawlOver bool  // the scheduler declared the crawl finished (reported when nothing was popped, or with PageBudget)
	// NextDue is, when nothing was due, how long until some host is
	// (-1: nothing queued at all, or the crawl paused): an idle worker
	// sleeps that long.
	NextDue time.Duration
	// Paused: the crawl is paused (Frontier.Control.Pause), in some shard asked:
	// nothing is popped there until it is resumed.
	Paused bool
	// Settings is the newest settings version in force in the shards
	// asked (keyspace.Keys.Settings): a process acting on an older one (its
	// Policy.Version) reads the settings again; until it has, those
	// shards pop nothing for it.
	Settings int64
	// Resolve are hosts due whose address the pops need first (Policy.
	// PerAddress): the worker resolves them and stores the answers
	// (SetAddresses) before it asks again.
	Resolve []string
}

// Exchanged is what one Exchange did.
type Exchanged struct {
	Queued [][]bool // per Finished: which of its children were queued (new to the crawl)
	Held   []bool   // per Finished: its lease was still held, so its outcome was recorded
	Popped []*Lease // the new leases, at most the number wanted
	// Again: the late leases given back (Lease.Late) that their hosts gave
	// a new token: still held, with the new token's window, to be fetched.
	Again []*Lease
	Info  PopInfo
	// Forget: a shard asked only for URLs refused because Redis lost this
	// process's exchanges there (ErrRolledBack), after the rest of the
	// exchange went through (with several shards). What the lost writes taught the
	// process — links known to be seen — must be forgotten, as on the error.
	Forget bool
	// recordedNow: per Finished, its page was recorded by this very call
	// (Held is true also for one recorded by the same exchange sent before).
	recordedNow []bool
	// Unasked: a shard asked only for URLs failed (with several shards), and why; what
	// the rest of the exchange did stands, and that shard is asked again
	// next time.
	Unasked error
}

// ResultsKept bounds a crawl's results streams (XADD MAXLEN ~): a
// worker's --out file keeps every record; the streams keep about the most
// recent million, shared out among the shards.
const ResultsKept = 1_000_000

// failedCap bounds the failed list; its count lives on in the stats hash.
const failedCap = 10000

// Exchange is a worker's whole conversation with the frontier, and the one
// way a lease ends with its page's outcome, in one round trip of up to
// five atomic scripts: exchange.lua, where each Finished lease's links are
// marked seen and the new ones queued; then finish.lua, where its result
// is recorded and counters bumped, its lease ended (if it was lost
// meanwhile, the links are still queued but nothing is recorded); then
// back.lua, where the leases in back return to the front of their hosts'
// queues, a late one (Lease.Late) kept instead if its host has a new
// token for it now (Exchanged.Again), and unused tokens go back; then
// handout.lua, where up to want new URLs are granted, their hosts' tokens
// taken; then take.lua, where those URLs are popped under fresh leases.
// Batching is what keeps a crawl cheap for Redis: a lone call costs Redis
// more than a page's work. Links beyond one Bloom batch go in calls
// before the last, which only queue links; links always go before the
// leases end, so a crash between them loses nothing.
//
// Calls of one Frontier are serialized: each carries the count of this
// process's exchanges, which Redis must hold too (ErrRolledBack).
func (f *shard) Exchange(ctx context.Context, done []Finished, back []*Lease, want int) (Exchanged, error) {
	f.xmu.Lock()
	defer f.xmu.Unlock()
	x, bad, err := f.exchange(ctx, done, back, want)
	if err == nil && len(bad) > 0 {
		// Popped items that are not ours to read: parked on the failed list,
		// rather than lost or popped again and again.
		_, _, err = f.exchange(ctx, bad, nil, 0)
	}
	return x, err
}

// exchange makes the calls of one Exchange (f.xmu held): exchange.lua,
// finish.lua, back.lua, handout.lua and take.lua in one pipeline (pipeline.go's part, as each shard's of
// an Exchange over shards), and returns the popped items it could not
// decode, ended with a failed outcome.
func (f *shard) exchange(ctx context.Context, done []Finished, back []*Lease, want int) (Exchanged, []Finished, error) {
	p := &part{done: done, back: back, pop: want, away: make([]bool, len(done))}
	if err := f.prepare(ctx, p); err != nil {
		return Exchanged{}, nil, err
	}
	sent, got := execParts(ctx, f.c, f.o.now, []*part{p})
	if err := f.finish(ctx, p, sent, got); err != nil {
		return Exchanged{}, nil, err
	}
	return p.x, p.bad, nil
}

// baseArgs are the arguments of every call of an exchange: who calls,
// where its links go, the host's page cap that bounds how many are
// queued, and the cap of requests in flight (a host's, and with
// politeness per address an address's), whose slots every call that
// grants, leases or ends a lease keeps (hostslots.lua).
func (f *shard) baseArgs() exchangeArgs {
	p := f.policy()
	return exchangeArgs{Expect: f.exchanges, ResultsCap: f.resultsCap, Instance: f.o.Instance, Lifo: p.Depth, Lane: f.o.Lane,
		HostMax: p.HostPageCap, HostConc: p.HostConcurrency, IP: p.PerAddress}
}

// linksArgs are the arguments of an exchange's last exchange.lua call
// (the one that counts it), which takes links [start, end) of done's
// (offset[d]: where done[d]'s begin): per finished lease, its id and how
// many of them are its page's, whose new ones finish.lua's record counts.
func (f *shard) linksArgs(done []Finished, offset []int, start, end int) exchangeArgs {
	a := f.baseArgs()
	a.Count = true
	a.Budget = f.pageBudget(f.policy())
	for d, x := range done {
		lo, hi := max(offset[d], start), min(offset[d+1], end)
		a.Fresh = append(a.Fresh, [2]int{a.text(x.Lease.ID), max(hi-lo, 0)})
	}
	return a
}

// endArgs are finish.lua's arguments, which ends done's leases: flags are
// the answers for done's links before start, which earlier calls of the
// batch offered (offset[d]: where done[d]'s links begin).
func (f *shard) endArgs(done []Finished, offset []int, start int, flags []bool) exchangeArgs {
	a := f.baseArgs()
	a.Expect = f.exchanges + 1 // after exchange.lua's
	p := f.policy()
	a.Budget = f.pageBudget(p)
	a.PauseKeep = politeness.PauseMemory.Milliseconds()
	a.Factor, a.MaxDelayMs = p.DelayFactor, p.MaxDelay.Milliseconds()
	for d, x := range done {
		var da doneArgs
		da[dLease], da[dStat] = int64(a.text(x.Lease.Member())), int64(a.stat(x.Outcome.counters()))
		if x.Outcome.Fetched {
			da[dFlags] |= doneFetched
		}
		if x.Outcome.Refund {
			da[dFlags] |= doneRefund
			da[dGrant] = x.Lease.grant
			if x.Lease.addr != "" {
				da[dAddr] = int64(a.text(x.Lease.addr))
			}
		}
		if x.Outcome.Record != nil {
			da[dRecord] = int64(a.text(string(x.Outcome.Record)))
		}
		if p.DelayFactor > 0 {
			da[dMs] = x.Outcome.FetchTime.Milliseconds()
		}
		if x.Outcome.Failed != "" {
			da[dFailed] = int64(a.text(x.Lease.failedEntry(x.Outcome.Failed)))
		}
		if pb := x.Outcome.PutBack; pb != nil {
			flag := int64(doneRequeued)
			if pb.Deferred {
				flag = doneDeferred
			}
			da[dFlags] |= flag
			if pb.entry != "" {
				da[dPut] = int64(a.text(pb.entry))
			}
			da[dAfter] = max(pb.After.Milliseconds(), 1)
		}
		if m := dueMember(x.Lease, x.Outcome); m != "" {
			da[dVisit], da[dDue] = int64(a.text(m)), x.Outcome.Due.Milliseconds()
		}
		for i := offset[d]; i < min(offset[d+1], start); i++ {
			if flags[i] {
				da[dCounted]++
			}
		}
		a.Done = append(a.Done, da)
	}
	return a
}

// refunds: some page of the call made no request, and its token goes
// back (finish.lua leaves it for back.lua).
func (a exchangeArgs) refunds() bool {
	for _, d := range a.Done {
		if d[dFlags]&doneRefund != 0 && d[dGrant] > 0 {
			return true
		}
	}
	return false
}

// backArgs sets the leases given back: their members, their tokens'
// slots and their addresses.
func (a *exchangeArgs) backArgs(back []*Lease) {
	for i, l := range back {
		a.Back = append(a.Back, a.text(l.Member()))
		a.BackGrants = append(a.BackGrants, l.grant)
		if l.addr != "" {
			if a.BackAddrs == nil {
				a.BackAddrs = make([]int, len(back))
			}
			a.BackAddrs[i] = a.text(l.addr)
		}
	}
}

// exchangeKeys are exchange.lua's keys after the Bloom filter's
// (exchangeKeyList).
func (f *shard) exchangeKeys() []string { return keysOf(exchangeKeyList, f) }

// process is the worker process's id, whose exchanges the counter counts.
func (f *shard) process() string { return strings.TrimSuffix(f.idPrefix, "-") }

// counted reads what exchange.lua's guard said of an exchange (f.xmu
// held): refused because the crawl is gone or Redis lost this process's
// exchanges, or counted as one more.
func (f *shard) counted(tail []any, err error) error {
	if keyspace.IsGone(err) {
		return ErrGone
	}
	if errors.Is(err, dedup.ErrRefused) && len(tail) == 1 {
		theirs, _ := tail[0].(int64)
		ahead := theirs > f.exchanges
		f.exchanges = theirs // from now on, Redis's count is the truth
		if ahead {
			return ErrReplyLost
		}
		return ErrRolledBack
	}
	if se := keyspace.ScriptErr("exchange", err); se != nil {
		return se
	}
	if err != nil {
		return fmt.Errorf("frontier: exchange: %w", err)
	}
	f.exchanges++
	return nil
}

// Offer marks links seen and queues the new ones, and reports which were
// new: the links of pages whose leases live in another shard, offered
// again by the scheduler's sweep from an outbox entry no ack came for
// (Frontier.Exchange). It is an exchange with no lease to end and nothing
// to pop, and counts as one, so that a rollback of this shard is noticed
// here too.
func (f *shard) Offer(ctx context.Context, links []Item) ([]bool, error) {
	if len(links) == 0 {
		return nil, nil
	}
	urls, payload, err := backEntries(links)
	if err != nil {
		return nil, err
	}
	f.xmu.Lock()
	defer f.xmu.Unlock()
	return f.offer(ctx, urls, payload, nil)
}

// offer marks links seen and queues the new ones, and acks outbox
// entries with the last of its calls (f.xmu held): an exchange with no
// lease to end and nothing to pop.
func (f *shard) offer(ctx context.Context, urls []string, payload []any, acks []outboxAck) ([]bool, error) {
	args := func(_, _ int, _ []bool, last bool) []any {
		a := f.baseArgs()
		a.Count = last
		if last {
			a.Acks = acks
		}
		return a.encode()
	}
	flags, tail, err := f.seen.ExecBatch(ctx, exchangeScript, urls, payload, f.exchangeKeys(), args)
	if err = f.counted(tail, err); err != nil {
		return nil, err
	}
	return flags, nil
}
