package frontier

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/fence"
	"github.com/redis/go-redis/v9"
)

// Item is one URL to crawl. It travels as JSON (never a language-specific
// serialization: the queue is shared with every worker).
type Item struct {
	URL      string   `json:"u"`
	Depth    int      `json:"d"`
	Parent   string   `json:"p,omitempty"` // the page that linked to it
	Kind     string   `json:"k,omitempty"` // "" for a page, KindSitemap for a sitemap
	Attempts int      `json:"a,omitempty"`
	Errors   []string `json:"e,omitempty"`   // the earlier attempts' errors, oldest first
	Err      string   `json:"err,omitempty"` // why it failed, on the failed list
}

// KindSitemap marks an Item that is a sitemap to read, not a page.
const KindSitemap = "sitemap"

// Keys names a crawl's frontier keys; all share the crawl's hash tag.
type Keys struct {
	// Queues is the prefix of the hosts' queues: Queues+host is one host's
	// list of URLs (lib.lua has the format).
	Queues string
	// Lengths is a hash: host -> URLs in its queue.
	Lengths                                                  string
	Ready, Leases, Deferred, Failed, Workers, Stats, Results string
	DoneFlag                                                 string // "1" once the scheduler saw nothing left to do
	// HostPages counts pages fetched per host, with a per-host cap.
	HostPages string
	// Ended is a sorted set: lease id -> when an exchange ended it (ms),
	// kept a minute, so that the same exchange sent again (its reply was
	// lost) finds its pages recorded rather than their leases lost.
	Ended string
	// Counters is the prefix of the processes' exchange counters (Counter).
	Counters string
	// Fence, for a shard other than the first, keeps the highest epoch of
	// a scheduler that swept it (fence.Script.RunRaising); "" for the
	// first shard, whose sweeps are fenced by the leader's epoch counter.
	Fence string
	// Config is the crawl's settings hash (written by crawl.Seed), or for
	// a shard other than the first a marker of the crawl in that shard: the
	// crawl exists while it does. Scripts that write refuse when it is
	// missing (ErrGone), so a reset crawl is not brought back piecemeal.
	Config string
}

// Counter is the key in which Redis counts the exchanges of the process
// whose token is given (see Frontier.Exchange).
func (k Keys) Counter(token string) string { return k.Counters + token }

// Queue is the key of host's queue.
func (k Keys) Queue(host string) string { return k.Queues + host }

// Wake is the pub/sub channel on which a message says that the queues,
// which were empty, have URLs again (lib.lua's fr_count): idle workers
// wait on it instead of polling. (A channel is not a key: no host's queue
// can clash with it.)
func (k Keys) Wake() string { return k.Queues + "wake" }

// KeysForShard returns the keys of shard s of crawl name's frontier.
// Shard 0's are KeysFor(name)'s, so a crawl of one shard is laid out as
// crawls were before shards; shard s > 0 lives under its own hash tag
// crawl:{name/s}, which a Redis Cluster may place on any master. (A crawl
// name has no '/', so no other crawl's keys can take that form.)
func KeysForShard(name string, s int) Keys {
	if s == 0 {
		return KeysFor(name)
	}
	p := "crawl:{" + name + "/" + strconv.Itoa(s) + "}:"
	k := keysUnder(p)
	k.Config, k.Fence = p+"exists", p+"fence"
	return k
}

// KeysFor returns the keys of crawl name under crawl:{name}.
func KeysFor(name string) Keys { return keysUnder("crawl:{" + name + "}:") }

func keysUnder(p string) Keys {
	return Keys{Queues: p + "queue:", Lengths: p + "lengths", Counters: p + "counter:", Ready: p + "ready", Leases: p + "leases", Deferred: p + "deferred",
		Failed: p + "failed", Workers: p + "workers", Stats: p + "stats", Results: p + "results", DoneFlag: p + "done",
		Config: p + "config", HostPages: p + "hostpages", Ended: p + "ended"}
}

var (
	//go:embed lib.lua
	lib string
	//go:embed enqueue.lua
	enqueueBody   string
	enqueueScript = dedup.Compose(lib + enqueueBody)
	//go:embed exchange.lua
	exchangeBody   string
	exchangeScript = dedup.Compose(lib + exchangeBody)
	//go:embed defer.lua
	deferSrc    string
	deferScript = redis.NewScript(lib + deferSrc)
	//go:embed requeue.lua
	requeueSrc    string
	requeueScript = redis.NewScript(lib + requeueSrc)
	//go:embed migrate.lua
	migrateSrc    string
	migrateScript = redis.NewScript(lib + migrateSrc)
	//go:embed register.lua
	registerSrc    string
	registerScript = redis.NewScript(registerSrc)
	//go:embed renew.lua
	renewSrc    string
	renewScript = redis.NewScript(renewSrc)
	//go:embed schedule.lua
	scheduleBody   string
	scheduleScript = fence.NewScript(lib + scheduleBody)
	//go:embed allow.lua
	allowBody   string
	allowScript = fence.NewScript(allowBody)
)

// backEntries are items as enqueue.lua and exchange.lua take them: their
// URLs (for the Bloom filter) and their back-of-queue entries.
func backEntries(items []Item) ([]string, []any, error) {
	urls := make([]string, len(items))
	payload := make([]any, len(items))
	for i, it := range items {
		e, err := backEntry(it)
		if err != nil {
			return nil, nil, err
		}
		urls[i], payload[i] = it.URL, e
	}
	return urls, payload, nil
}

// ErrGone: the crawl's config is gone (reset, or Redis lost its data);
// nothing was written.
var ErrGone = errors.New("the crawl is gone from Redis")

// ErrIDInUse: a live worker is registered under the id already (two
// processes given one --id, or an earlier run of this one that was killed
// and whose registration has not lapsed yet). Nothing was written.
var ErrIDInUse = errors.New("frontier: a live worker has this id")

// ErrLeaseLost: the item's lease ran out and the scheduler took it back.
var ErrLeaseLost = errors.New("frontier: lease lost")

// ErrRolledBack: Redis does not hold all of this process's past exchanges
// (it restarted from an older snapshot, failed over to a replica that
// lagged, or the reply of an exchange it did apply was lost). Nothing was
// written. What the process learned from its exchanges — which links are
// already seen — can no longer be trusted; once it has forgotten that, it
// sends the same exchange again, which Redis now accepts.
var ErrRolledBack = errors.New("frontier: Redis no longer holds this worker's past exchanges (restored from an older state?)")

// ErrReplyLost: Redis holds more of this process's exchanges than the
// process knows of: one whose reply it never got (a timeout, a connection
// cut) went through. Nothing was written by this call; sent again, the
// same exchange records nothing twice (its pages' leases are found ended
// by it, Keys.Ended), so there is nothing to forget.
var ErrReplyLost = errors.New("frontier: an exchange whose reply was lost had gone through")

// Frontier is a crawl's reliable queue. Safe for concurrent use.
type Frontier struct {
	c     redis.UniversalClient
	keys  Keys
	seen  *dedup.Filter
	Lease time.Duration // how long a popped item is held without a heartbeat
	// HostSpacing is the least time between two pops of one host's URLs
	// (1/rate): a pop never offers a URL whose host is not due, so busy
	// hosts cost nothing. The token bucket still decides each fetch.
	HostSpacing time.Duration
	// PageBudget, when not 0, is the most pages the whole crawl fetches:
	// a pop hands out no more URLs than pages fetched plus URLs in flight
	// leave room for, and reports the page count (PopInfo.Pages).
	PageBudget int64
	// HostPageCap, when not 0, is the most pages fetched from one host:
	// once a host has them, its queued URLs are dropped (and counted)
	// when it comes up for a pop. URLs of it in flight then may still add
	// a few.
	HostPageCap int64
	// ResultsCap bounds this frontier's results stream (ResultsKept, or
	// its share of it in a crawl of several shards).
	ResultsCap int64
	idPrefix   string
	idSeq      atomic.Uint64
	// xmu serializes Exchange: each call carries the count of this
	// process's exchanges so far (exchanges), which Redis must hold too.
	xmu       sync.Mutex
	exchanges int64
}

// New returns the frontier of keys, deduplicating through seen.
func New(c redis.UniversalClient, keys Keys, seen *dedup.Filter) *Frontier {
	var b [9]byte
	rand.Read(b[:])
	return &Frontier{c: c, keys: keys, seen: seen, Lease: 10 * time.Second, ResultsCap: ResultsKept,
		idPrefix: hex.EncodeToString(b[:]) + "-"}
}

// Keys are the frontier's Redis keys.
func (f *Frontier) Keys() Keys { return f.keys }

// Seen is the frontier's Bloom filter.
func (f *Frontier) Seen() *dedup.Filter { return f.seen }

// Enqueue marks items' URLs seen and queues those not seen before, in one
// script per batch. It returns which items were new, and so queued.
func (f *Frontier) Enqueue(ctx context.Context, items []Item) ([]bool, error) {
	return f.enqueue(ctx, items, "new")
}

// EnqueueAll marks items' URLs seen and queues every one of them, even
// those the filter answers "seen" for: seeds, which a Bloom false positive
// must not drop (Scrapy's dont_filter). It returns which were new to the
// filter. The caller removes duplicates among items.
func (f *Frontier) EnqueueAll(ctx context.Context, items []Item) ([]bool, error) {
	return f.enqueue(ctx, items, "all")
}

func (f *Frontier) enqueue(ctx context.Context, items []Item, mode string) ([]bool, error) {
	if len(items) == 0 {
		return nil, nil
	}
	urls, payload, err := backEntries(items)
	if err != nil {
		return nil, err
	}
	fresh, err := f.seen.Exec(ctx, enqueueScript, urls, payload, []string{f.keys.Queues, f.keys.Ready, f.keys.Stats, f.keys.Lengths}, []any{mode})
	if err != nil {
		return nil, fmt.Errorf("frontier: enqueue: %w", err)
	}
	return fresh, nil
}

// OldQueue is the queue's key in crawls seeded before the compact queues
// (one sorted set for all hosts); MigrateOldQueue empties it.
func (k Keys) OldQueue() string { return k.Queues[:len(k.Queues)-len("queue:")] + "items" }

// MigrateOldQueue moves the URLs of a crawl seeded by an older version
// (OldQueue) to the hosts' queues, a thousand a script call, and returns
// how many it moved: 0 for any crawl seeded since. Safe to run from many
// workers at once.
func (f *Frontier) MigrateOldQueue(ctx context.Context) (int, error) {
	moved := 0
	for {
		n, err := migrateScript.Run(ctx, f.c, []string{f.keys.OldQueue(), f.keys.Queues, f.keys.Ready, f.keys.Stats, f.keys.Lengths},
			1000).Int()
		if err != nil {
			return moved, fmt.Errorf("frontier: migrate the old queue: %w", err)
		}
		if n == 0 {
			return moved, nil
		}
		moved += n
	}
}

// Lease is a popped item held by one worker.
type Lease struct {
	ID   string
	Item Item
	Host string
	raw  string

	// until is the local deadline of the lease, on this process's
	// monotonic clock (nanoseconds since clock0): the moment the call that
	// granted or last renewed it was sent, plus the lease length. Redis
	// set its own deadline no earlier (its clock read the call after it
	// was sent), so before until the lease is surely held. lost: a
	// heartbeat found it no longer held.
	until atomic.Int64
	lost  atomic.Bool
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
	return time.Duration(u) - time.Since(clock0)
}

// Member is the lease as the leases sorted set holds it: its id and its
// entry ("id\nhost\nitem-json"), so that a lease carries its item and one
// structure tells both what is held and until when.
func (l *Lease) Member() string { return l.ID + "\n" + l.Host + "\n" + l.raw }

// leaseID returns an id no other pop anywhere will use: this process's
// random prefix and a counter.
func (f *Frontier) leaseID() string {
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

// Defer returns a leased item to be fetched again after delay (a retry,
// or the server's Retry-After). item replaces the stored one, so the caller
// may count an attempt.
func (f *Frontier) Defer(ctx context.Context, l *Lease, item Item, delay time.Duration) error {
	e, err := entry(item)
	if err != nil {
		return err
	}
	n, err := deferScript.Run(ctx, f.c, []string{f.keys.Leases, f.keys.Deferred}, l.Member(), e, max(delay.Milliseconds(), 1)).Int()
	if err != nil {
		return fmt.Errorf("frontier: defer: %w", err)
	}
	if n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Requeue puts a leased item back at the front of its host's queue because
// the host is busy, and keeps the host from being offered again for wait.
func (f *Frontier) Requeue(ctx context.Context, l *Lease, wait time.Duration) error {
	e, err := entry(l.Item)
	if err != nil {
		return err
	}
	n, err := requeueScript.Run(ctx, f.c, []string{f.keys.Leases, f.keys.Queues, f.keys.Ready, f.keys.Stats, f.keys.Lengths},
		l.Member(), e, max(wait.Milliseconds(), 1)).Int()
	if err != nil {
		return fmt.Errorf("frontier: requeue: %w", err)
	}
	if n == 0 {
		return ErrLeaseLost
	}
	return nil
}

// Register adds worker to the crawl's registry, alive for one lease
// length (Heartbeat keeps it so). If a live worker holds the id, it
// returns ErrIDInUse and how long until that registration lapses, should
// its holder not heartbeat again; ErrGone when the crawl is gone.
func (f *Frontier) Register(ctx context.Context, worker string) (time.Duration, error) {
	if worker == "" {
		return 0, errors.New("frontier: register: empty worker id")
	}
	n, err := registerScript.Run(ctx, f.c, []string{f.keys.Workers, f.keys.Config}, worker, f.Lease.Milliseconds()).Int64()
	switch {
	case err != nil:
		return 0, fmt.Errorf("frontier: register: %w", err)
	case n < 0:
		return 0, ErrGone
	case n > 0:
		return time.Duration(n) * time.Millisecond, ErrIDInUse
	}
	return 0, nil
}

// Heartbeat records that worker is alive (until one lease length from now)
// and extends the leases it holds; it returns how many were still held,
// or ErrGone when the crawl is gone. A lease extended has its local
// deadline moved on (Lease.Left); one found lost is marked so.
func (f *Frontier) Heartbeat(ctx context.Context, worker string, leases []*Lease) (int, error) {
	args := []any{worker, f.Lease.Milliseconds()}
	for _, l := range leases {
		args = append(args, l.Member())
	}
	sent := time.Now()
	res, err := renewScript.Run(ctx, f.c, []string{f.keys.Leases, f.keys.Workers, f.keys.Config}, args...).Result()
	if err != nil {
		return 0, fmt.Errorf("frontier: heartbeat: %w", err)
	}
	if n, ok := res.(int64); ok && n < 0 {
		return 0, ErrGone
	}
	held, _ := res.([]any)
	if len(held) != len(leases) {
		return 0, fmt.Errorf("frontier: heartbeat: unexpected reply %v", res)
	}
	n := 0
	for i, l := range leases {
		if h, _ := held[i].(int64); h == 1 {
			l.granted(sent, f.Lease)
			n++
		} else {
			l.lost.Store(true) // reclaimed: another worker may have it now
		}
	}
	return n, nil
}

// Deregister removes a stopped worker from the registry at once (it would
// otherwise count as alive until its last heartbeat's lease ran out).
// ZREM never creates a key: safe on a crawl that is gone.
func (f *Frontier) Deregister(ctx context.Context, worker string) error {
	if err := f.c.ZRem(ctx, f.keys.Workers, worker).Err(); err != nil {
		return fmt.Errorf("frontier: deregister: %w", err)
	}
	return nil
}

// Sweep is what one scheduler pass moved, and whether the crawl is over.
type Sweep struct {
	Released, Reclaimed, Failed int
	CrawlOver                   bool
	// NextDeferred is when the next deferred item is due (-1: none): the
	// scheduler sweeps again then.
	NextDeferred time.Duration
	empty        bool  // nothing queued, leased or deferred in this shard
	enqueued     int64 // URLs ever queued at the back of this shard's queues
	// With a page budget over shards: this shard's pages fetched, URLs in
	// flight, share of the budget, and URLs queued or deferred.
	pages, leases, allow, work int64
}

// Schedule is the leader's sweep, fenced by its epoch: due deferred items
// return to the queue; expired leases return with attempts+1, or go to the
// failed list at maxAttempts. A stale leader's sweep is refused whole
// (fence.ErrFenced). epochKey is the scheduler lock's epoch counter
// (leader.EpochKey).
func (f *Frontier) Schedule(ctx context.Context, epochKey string, epoch int64, maxAttempts, limit int, pageBudget int64) (Sweep, error) {
	return f.schedule(ctx, epochKey, epoch, maxAttempts, limit, pageBudget, sweepAlone)
}

// The modes of a sweep (schedule.lua's ARGV[8]).
const (
	sweepAlone  = "1"   // the crawl's only shard: the sweep decides whether the crawl is done
	sweepReport = "0"   // a shard of several: report, Shards decides
	sweepEnd    = "end" // Shards decided the crawl is over: end this shard
	// sweepFinish: Shards decided the crawl is over: write this shard's
	// last records, without setting its done flag (CrawlOver: all written).
	sweepFinish = "finish"
)

// fenced runs a fenced script as the scheduler of epoch: against the
// leader's epoch counter, or, for a shard with a Fence key (whose slot the
// counter is not in), against that key (fence.Script.RunRaising).
func (f *Frontier) fenced(ctx context.Context, s *fence.Script, epochKey string, epoch int64, keys []string, args ...any) (any, error) {
	if f.keys.Fence != "" {
		return s.RunRaising(ctx, f.c, f.keys.Fence, epoch, keys, args...)
	}
	return s.Run(ctx, f.c, epochKey, epoch, keys, args...)
}

// schedule is the sweep, in one of the modes above. pageBudget -1 is
// this shard's share of the budget (Shards).
func (f *Frontier) schedule(ctx context.Context, epochKey string, epoch int64, maxAttempts, limit int, pageBudget int64, mode string) (Sweep, error) {
	res, err := f.fenced(ctx, scheduleScript, epochKey, epoch,
		[]string{f.keys.Queues, f.keys.Ready, f.keys.Leases, f.keys.Deferred, f.keys.Failed, f.keys.Stats, f.keys.DoneFlag, f.keys.Workers,
			f.keys.Config, f.keys.Results, f.keys.Lengths},
		maxAttempts, limit, failedCap, pageBudget, WorkerForgetAfter.Milliseconds(), f.ResultsCap, mode)
	if err != nil && strings.HasPrefix(err.Error(), "GONE") {
		return Sweep{}, ErrGone
	}
	if err != nil {
		return Sweep{}, fmt.Errorf("frontier: schedule: %w", err)
	}
	v, _ := res.([]any)
	if len(v) != 11 {
		return Sweep{}, fmt.Errorf("frontier: schedule: unexpected reply %v", res)
	}
	n := func(x any) int { i, _ := x.(int64); return int(i) }
	n64 := func(x any) int64 { i, _ := x.(int64); return i }
	return Sweep{Released: n(v[0]), Reclaimed: n(v[1]), Failed: n(v[2]), CrawlOver: n(v[3]) == 1,
		NextDeferred: time.Duration(n(v[4])) * time.Millisecond, empty: n(v[5]) == 1, enqueued: n64(v[6]),
		pages: n64(v[7]), leases: n64(v[8]), allow: n64(v[9]), work: n64(v[10])}, nil
}

// moveAllowance changes this shard's share of the page budget by d (a
// negative d takes back at most what the shard leaves unused), as the
// scheduler of epoch, and returns the change made (allow.lua).
func (f *Frontier) moveAllowance(ctx context.Context, epochKey string, epoch, d int64) (int64, error) {
	res, err := f.fenced(ctx, allowScript, epochKey, epoch, []string{f.keys.Stats, f.keys.Leases}, d, f.keys.Wake())
	if err != nil {
		return 0, fmt.Errorf("frontier: move the page budget: %w", err)
	}
	moved, _ := res.(int64)
	return moved, nil
}

// WorkerForgetAfter is how long a worker that stopped being alive stays in
// the registry.
const WorkerForgetAfter = time.Minute

// Workers lists the workers alive now: each sent a heartbeat within its
// lease length, and has not deregistered.
func (f *Frontier) Workers(ctx context.Context) ([]string, error) {
	now, err := f.c.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("frontier: workers: %w", err)
	}
	return f.c.ZRangeByScore(ctx, f.keys.Workers, &redis.ZRangeBy{
		Min: fmt.Sprint(now.UnixMilli()), Max: "+inf"}).Result()
}

// Lapsed lists the registered workers whose registration has lapsed (their
// last heartbeat is over a lease old) and that the registry has not
// forgotten yet: stopped without deregistering, or alive but unable to
// heartbeat, as when Redis refuses writes.
func (f *Frontier) Lapsed(ctx context.Context) ([]string, error) {
	now, err := f.c.Time(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("frontier: workers: %w", err)
	}
	return f.c.ZRangeByScore(ctx, f.keys.Workers, &redis.ZRangeBy{
		Min: "-inf", Max: "(" + fmt.Sprint(now.UnixMilli())}).Result()
}

// Sizes are the frontier's counts.
type Sizes struct {
	Queued   int64 `json:"queued"`
	InFlight int64 `json:"in_flight"`
	Deferred int64 `json:"deferred"`
	Failed   int64 `json:"failed"`
}

// Empty reports whether nothing is left to do.
func (s Sizes) Empty() bool { return s.Queued == 0 && s.InFlight == 0 && s.Deferred == 0 }

// Sizes reads the counts in one round trip.
func (f *Frontier) Sizes(ctx context.Context) (Sizes, error) {
	pipe := f.c.Pipeline()
	read := f.sizes(ctx, pipe)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Sizes{}, fmt.Errorf("frontier: sizes: %w", err)
	}
	return read(), nil
}

// sizes queues the reads of the counts on pipe; the function it returns
// reads their answers once pipe ran.
func (f *Frontier) sizes(ctx context.Context, pipe redis.Pipeliner) func() Sizes {
	q := pipe.HGet(ctx, f.keys.Stats, "queued")
	i := pipe.ZCard(ctx, f.keys.Leases)
	d := pipe.ZCard(ctx, f.keys.Deferred)
	fl := pipe.LLen(ctx, f.keys.Failed)
	return func() Sizes {
		queued, _ := strconv.ParseInt(q.Val(), 10, 64) // absent: none
		return Sizes{queued, i.Val(), d.Val(), fl.Val()}
	}
}

// HostQueue is one host's queue, as HostQueues reads it.
type HostQueue struct {
	Host   string `json:"host"`
	Queued int64  `json:"queued"`
	// DueIn is how long until the host's next URL may be popped: its
	// spacing, or the wait a requeue (robots.txt back-off, busy host) set;
	// 0 when it is due now.
	DueIn time.Duration `json:"due_in_ns"`
}

// HostScanLimit bounds the hosts HostQueues examines: a crawl of millions
// of hosts gets a sample (the hosts due soonest), not a stall of Redis.
const HostScanLimit = 10000

// HostQueues returns the n hosts with the most URLs queued, longest first,
// and how many hosts have URLs queued (exact). With more than 10 000
// hosts, only the 10 000 due soonest are looked at for the longest.
func (f *Frontier) HostQueues(ctx context.Context, n int) ([]HostQueue, int64, error) {
	pipe := f.c.Pipeline()
	now := pipe.Time(ctx)
	total := pipe.HLen(ctx, f.keys.Lengths)
	ready := pipe.ZRangeWithScores(ctx, f.keys.Ready, 0, HostScanLimit-1)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("frontier: host queues: %w", err)
	}
	hosts := ready.Val()
	names := make([]string, len(hosts))
	for i, z := range hosts {
		names[i] = z.Member.(string)
	}
	var counts []any
	if len(names) > 0 {
		var err error
		if counts, err = f.c.HMGet(ctx, f.keys.Lengths, names...).Result(); err != nil {
			return nil, 0, fmt.Errorf("frontier: host queues: %w", err)
		}
	}
	nowMs := now.Val().UnixMilli()
	out := []HostQueue{}
	for i, z := range hosts {
		q, _ := strconv.ParseInt(fmt.Sprint(counts[i]), 10, 64) // nil: none
		if q > 0 {
			due := max(time.Duration(int64(z.Score)-nowMs)*time.Millisecond, 0)
			out = append(out, HostQueue{Host: z.Member.(string), Queued: q, DueIn: due})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Queued > out[j].Queued })
	return out[:min(n, len(out))], total.Val(), nil
}
