package frontier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/dedup"
)

// Outcome is how a page ended.
type Outcome struct {
	Children []Item // links to queue (deduplicated in the same script)
	Stat     string // the stats counter to bump: an outcome word (OutcomeOK …); "" for none
	Status   int    // the HTTP status the page was answered with: counted as "status:NNN"; 0 for none
	Record   []byte // result record (JSON) for the results stream; nil for none
	Failed   string // reason to keep the item on the failed list; "" for none
	Fetched  bool   // a page was fetched (counts against the page budget)
	// Offered is how many of the page's links an earlier Offer (to the
	// shards of their hosts, by Shards) found new: the record's new_links
	// counts them with those the exchange queues.
	Offered int
}

// counters are the stats fields the outcome bumps, comma-separated.
func (o Outcome) counters() string {
	if o.Status == 0 {
		return o.Stat
	}
	return strings.TrimPrefix(o.Stat+",status:"+strconv.Itoa(o.Status), ",")
}

// Finished is a lease ended with its page's outcome.
type Finished struct {
	Lease   *Lease
	Outcome Outcome
}

// PopInfo rides along with every pop.
type PopInfo struct {
	Pages     int64 // pages fetched so far in the whole crawl (with PageBudget)
	CrawlOver bool  // the scheduler declared the crawl finished (reported when nothing was popped, or with PageBudget)
	// NextDue is, when nothing was due, how long until some host is
	// (-1: nothing queued at all): an idle worker sleeps that long.
	NextDue time.Duration
}

// Exchanged is what one Exchange did.
type Exchanged struct {
	Queued [][]bool // per Finished: which of its children were queued (new to the crawl)
	Held   []bool   // per Finished: its lease was still held, so its outcome was recorded
	Popped []*Lease // the new leases, at most the number wanted
	Info   PopInfo
	// Forget: a shard asked only for URLs refused because Redis lost this
	// process's exchanges there (ErrRolledBack), after the rest of the
	// exchange went through (Shards). What the lost writes taught the
	// process — links known to be seen — must be forgotten, as on the error.
	Forget bool
	// Unasked: a shard asked only for URLs failed (Shards), and why; what
	// the rest of the exchange did stands, and that shard is asked again
	// next time.
	Unasked error
}

// ResultsKept bounds a crawl's results streams (XADD MAXLEN ~): a
// worker's --out file keeps every record; the streams keep about the most
// recent million, shared out among the shards (Frontier.ResultsCap).
const ResultsKept = 1_000_000

// failedCap bounds the failed list; its count lives on in the stats hash.
const failedCap = 10000

// replyGone is exchange.lua's refusal when the crawl's config is gone.
const replyGone = "gone"

// Exchange is a worker's whole conversation with the frontier, and the one
// way a lease ends with its page's outcome, in one atomic script call
// (exchange.lua): each Finished lease's links are marked seen and the new ones
// queued, its result recorded and counters bumped, its lease ended (if it
// was lost meanwhile, the links are still queued but nothing is recorded);
// the leases in back return to the front of their hosts' queues; and up to
// want new URLs are popped under fresh leases. Batching is what keeps a
// crawl cheap for Redis: a lone call costs Redis more than a page's work.
// Links beyond one Bloom batch go in calls before the last, which only
// queue links, so a crash between them loses nothing.
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

// exchangeArgs are exchange.lua's arguments after the Bloom filter's and
// the links': the script's header lists the same slots in the same order.
type exchangeArgs struct {
	expect      int64 // this process's exchanges Redis should hold
	count       bool  // this call counts as one (the batch's last call)
	done        []doneArgs
	back        []string // members of the leases given back
	want        int
	resultsCap  int64
	leaseMs     int64
	spacingMs   int64
	budget      int64
	hostMax     int64
	newLeaseIDs []string
}

// doneArgs are the eight slots of one finished lease.
type doneArgs struct {
	member, stat, record, failed string
	fetched                      bool
	first, links, counted        int // its links in this call: index of the first (1-based), how many, new ones counted by earlier calls
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func (a exchangeArgs) encode() []any {
	out := []any{a.expect, flag(a.count), len(a.done), len(a.back), a.want, a.resultsCap, failedCap, a.leaseMs, a.spacingMs,
		a.budget, a.hostMax}
	for _, d := range a.done {
		out = append(out, d.member, d.stat, d.record, d.failed, flag(d.fetched), d.first, d.links, d.counted)
	}
	for _, m := range a.back {
		out = append(out, m)
	}
	for _, id := range a.newLeaseIDs {
		out = append(out, id)
	}
	return out
}

// exchange makes the calls of one Exchange (f.xmu held) and returns the
// popped items it could not decode, ended with a failed outcome.
func (f *shard) exchange(ctx context.Context, done []Finished, back []*Lease, want int) (Exchanged, []Finished, error) {
	var urls []string
	var payload []any
	offset := make([]int, len(done)+1) // done[d]'s links are urls[offset[d]:offset[d+1]]
	for d, x := range done {
		u, p, err := backEntries(x.Outcome.Children)
		if err != nil {
			return Exchanged{}, nil, err
		}
		urls, payload = append(urls, u...), append(payload, p...)
		offset[d+1] = len(urls)
	}
	ids := make([]string, want)
	for i := range ids {
		ids[i] = f.leaseID()
	}
	keys := f.exchangeKeys()
	// The links may take several calls (dedup.ExecBatch); the call for
	// links [start, end) gets these arguments, flags being the answers for
	// the links before start.
	args := func(start, end int, flags []bool, last bool) []any {
		a := exchangeArgs{expect: f.exchanges, resultsCap: f.resultsCap}
		if !last { // an earlier call of a big batch only queues links
			return a.encode()
		}
		a.count, a.want, a.newLeaseIDs = true, want, ids
		a.leaseMs, a.spacingMs, a.budget, a.hostMax = f.o.Lease.Milliseconds(), f.o.HostSpacing.Milliseconds(), f.pageBudget(), f.o.HostPageCap
		for d, x := range done {
			lo, hi := max(offset[d], start), min(offset[d+1], end)
			da := doneArgs{member: x.Lease.Member(), stat: x.Outcome.counters(), record: string(x.Outcome.Record),
				fetched: x.Outcome.Fetched, first: lo - start + 1, links: max(hi-lo, 0), counted: x.Outcome.Offered}
			if x.Outcome.Failed != "" {
				da.failed = x.Lease.failedEntry(x.Outcome.Failed)
			}
			for i := offset[d]; i < min(offset[d+1], start); i++ {
				if flags[i] {
					da.counted++
				}
			}
			a.done = append(a.done, da)
		}
		for _, l := range back {
			a.back = append(a.back, l.Member())
		}
		return a.encode()
	}
	sent := time.Now() // before the call: new leases are surely held until sent + Lease
	flags, tail, err := f.seen.ExecBatch(ctx, exchangeScript, urls, payload, keys, args)
	if err = f.counted(tail, err); err != nil {
		return Exchanged{}, nil, err
	}
	x, bad, err := f.readReply(flags, tail, offset, ids)
	for _, l := range x.Popped {
		l.granted(sent, f.o.Lease)
	}
	return x, bad, err
}

// exchangeKeys are exchange.lua's keys after the Bloom filter's.
func (f *shard) exchangeKeys() []string {
	return []string{f.keys.Queues, f.keys.Ready, f.keys.Leases, f.keys.Stats, f.keys.Failed, f.keys.Results, f.keys.DoneFlag,
		f.keys.Counter(strings.TrimSuffix(f.idPrefix, "-")), f.keys.Config, f.keys.HostPages, f.keys.Lengths, f.keys.Ended}
}

// counted reads what exchange.lua's guard said of an exchange (f.xmu
// held): refused because the crawl is gone or Redis lost this process's
// exchanges, or counted as one more.
func (f *shard) counted(tail []any, err error) error {
	if errors.Is(err, dedup.ErrRefused) && len(tail) == 1 {
		if tail[0] == replyGone {
			return ErrGone
		}
		theirs, _ := tail[0].(int64)
		ahead := theirs > f.exchanges
		f.exchanges = theirs // from now on, Redis's count is the truth
		if ahead {
			return ErrReplyLost
		}
		return ErrRolledBack
	}
	if err != nil {
		return fmt.Errorf("frontier: exchange: %w", err)
	}
	f.exchanges++
	return nil
}

// Offer marks links seen and queues the new ones, and reports which were
// new: the links of pages whose leases live in another shard (Shards), sent
// before those pages' own exchange so that a crash between the two loses
// nothing. It is an exchange with no lease to end and nothing to pop, and
// counts as one, so that a rollback of this shard is noticed here too.
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
	args := func(_, _ int, _ []bool, last bool) []any {
		return exchangeArgs{expect: f.exchanges, count: last, resultsCap: f.resultsCap}.encode()
	}
	flags, tail, err := f.seen.ExecBatch(ctx, exchangeScript, urls, payload, f.exchangeKeys(), args)
	if err = f.counted(tail, err); err != nil {
		return nil, err
	}
	return flags, nil
}

// readReply reads exchange.lua's reply after the links' flags: a held
// flag per Finished, then pages, done, wait, M, and M popped items (host,
// item) under the new lease ids in order.
func (f *shard) readReply(flags []bool, tail []any, offset []int, ids []string) (Exchanged, []Finished, error) {
	nd := len(offset) - 1
	if len(tail) < nd+4 {
		return Exchanged{}, nil, fmt.Errorf("frontier: exchange: short reply %v", tail)
	}
	x := Exchanged{Queued: make([][]bool, nd), Held: make([]bool, nd)}
	for d := 0; d < nd; d++ {
		x.Queued[d] = flags[offset[d]:offset[d+1]]
		x.Held[d] = tail[d] == int64(1) || tail[d] == int64(2) // 2: recorded by this exchange sent before
	}
	tail = tail[nd:]
	pages, _ := tail[0].(int64)
	isDone, _ := tail[1].(int64)
	wait, _ := tail[2].(int64)
	m, _ := tail[3].(int64)
	x.Info = PopInfo{Pages: pages, CrawlOver: isDone == 1, NextDue: time.Duration(wait) * time.Millisecond}
	if m < 0 || int(m) > len(ids) || len(tail) != 4+2*int(m) {
		return x, nil, fmt.Errorf("frontier: exchange: malformed pop reply %v", tail)
	}
	var bad []Finished
	for i := 0; i < int(m); i++ {
		host, _ := tail[4+2*i].(string)
		raw, _ := tail[5+2*i].(string)
		l := &Lease{ID: ids[i], raw: raw, Host: host}
		if err := json.Unmarshal([]byte(raw), &l.Item); err != nil {
			bad = append(bad, Finished{Lease: l, Outcome: Outcome{Stat: OutcomeFailed, Failed: fmt.Sprintf("undecodable queue item: %v", err)}})
			continue
		}
		x.Popped = append(x.Popped, l)
	}
	return x, bad, nil
}
