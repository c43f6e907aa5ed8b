package frontier

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/frontier/keyspace"
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
	// V is what the URL's last fetch left for this one (recrawl.Visit.Encode): set
	// on a revisit, absent on a first fetch.
	V string `json:"v,omitempty"`
	// Priority orders the URLs of one host: a higher one is popped first
	// (MinPriority to MaxPriority; 0 for most). Across hosts the order
	// stays the tokens': an urgent URL never jumps its host's token.
	Priority int `json:"pr,omitempty"`
}

// The priorities a URL may have (Item.Priority): each level of a host is a
// list of its own (queue.lua).
const MinPriority, MaxPriority = -9, 9

// KindSitemap marks an Item that is a sitemap to read, not a page.
const KindSitemap = "sitemap"

var (
	enqueueScript   = lua.Script("enqueue")
	exchangeScript  = lua.Script("exchange")
	hostDelayScript = lua.Script("hostdelay")
	renewScript     = lua.Script("renew")
	// A sweep is two fenced scripts in one pipeline: due work back to the
	// queues (schedule.lua), then the sweep's end (schedule_end.lua).
	scheduleScript    = fence.NewScript("frontier/schedule", lua.Source("schedule"))
	scheduleEndScript = fence.NewScript("frontier/schedule_end", lua.Source("schedule_end"))
	allowScript       = fence.NewScript("frontier/allow", lua.Source("allow"))
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

// worse is the error of two that asks more of the caller: the crawl gone,
// a script that cannot run, then Redis gone back in time, then a lost
// reply, then any other.
func worse(a, b error) error {
	rank := func(err error) int {
		switch {
		case err == nil:
			return 0
		case errors.Is(err, ErrGone):
			return 5
		case errors.Is(err, ErrScript):
			return 4
		case errors.Is(err, ErrRolledBack):
			return 3
		case errors.Is(err, ErrReplyLost):
			return 2
		}
		return 1
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// shard is one shard of a crawl's frontier: one set of the keys in the
// package doc, under one hash tag, with its Bloom filter. Safe for
// concurrent use.
type shard struct {
	c    redis.UniversalClient
	keys keyspace.Keys
	seen *dedup.Filter // nil until the frontier is opened (Open, Create)
	// o is the frontier's Options, read at each call; pm guards its
	// Policy (store.SetPolicy).
	o  *Options
	pm *sync.RWMutex
	// sharded: one of several shards, which with a page budget pops
	// within its own share of it (Frontier.Schedule) rather than the
	// whole budget.
	sharded bool
	// index is this shard's place among the crawl's shards: with
	// politeness per address, which slots of an address's schedule its
	// pops may take (addrs.lua).
	index, shards int
	// resultsCap bounds this shard's results stream: its share of
	// ResultsKept.
	resultsCap int64
	idPrefix   string
	idSeq      atomic.Uint64
	// xmu serializes Exchange: each call carries the count of this
	// process's exchanges so far (exchanges), which Redis must hold too.
	xmu       sync.Mutex
	exchanges int64
}

func newShard(c redis.UniversalClient, keys keyspace.Keys, o *Options, pm *sync.RWMutex, index, shards int) *shard {
	var b [9]byte
	rand.Read(b[:])
	return &shard{c: c, keys: keys, o: o, pm: pm, sharded: shards > 1, index: index, shards: shards, resultsCap: cmp.Or(o.ResultsKept, ResultsKept) / int64(shards),
		idPrefix: hex.EncodeToString(b[:]) + "-"}
}

// pageBudget is the budget argument of this shard's scripts: the whole
// crawl's, or -1 for the shard's own share of it.
func (f *shard) pageBudget(p Policy) int64 {
	if f.sharded && p.PageBudget > 0 {
		return -1
	}
	return p.PageBudget
}

// policy is the pops' policy in force (store.SetPolicy).
func (f *shard) policy() Policy {
	f.pm.RLock()
	defer f.pm.RUnlock()
	return f.o.Policy
}

// errNotOpen: a frontier made by New, without its Bloom filters, was asked
// to queue URLs.
var errNotOpen = errors.New("frontier: not opened (Open or Create): it has no Bloom filter")

// Enqueue marks items' URLs seen and queues those not seen before, in one
// script per batch. It returns which items were new, and so queued.
func (f *shard) Enqueue(ctx context.Context, items []Item) ([]bool, error) {
	return f.enqueue(ctx, items, "new")
}

// EnqueueAll marks items' URLs seen and queues every one of them, even
// those the filter answers "seen" for: seeds, which a Bloom false positive
// must not drop (Scrapy's dont_filter). It returns which were new to the
// filter. The caller removes duplicates among items.
func (f *shard) EnqueueAll(ctx context.Context, items []Item) ([]bool, error) {
	return f.enqueue(ctx, items, "all")
}

func (f *shard) enqueue(ctx context.Context, items []Item, mode string) ([]bool, error) {
	if len(items) == 0 {
		return nil, nil
	}
	urls, payload, err := backEntries(items)
	if err != nil {
		return nil, err
	}
	fresh, err := f.seen.Exec(ctx, enqueueScript, urls, payload, []string{f.keys.Queues, f.keys.Ready, f.keys.Stats, f.keys.Lengths, f.keys.Refill, f.keys.DoneFlag}, []any{mode, keyspace.Flag(f.policy().Depth)})
	if err != nil {
		return nil, fmt.Errorf("frontier: enqueue: %w", err)
	}
	return fresh, nil
}

// Sizes are the frontier's counts.
type Sizes struct {
	Queued   int64 `json:"queued"`
	InFlight int64 `json:"in_flight"`
	Deferred int64 `json:"deferred"`
	Failed   int64 `json:"failed"`
	// AtCap is the hosts a pop found with every slot held (seed
	// --host-concurrency), waiting for a request of theirs to end.
	AtCap int64 `json:"hosts_at_cap"`
}

// Empty reports whether nothing is left to do.
func (s Sizes) Empty() bool { return s.Queued == 0 && s.InFlight == 0 && s.Deferred == 0 }

// Sizes reads the counts in one round trip.
func (f *shard) Sizes(ctx context.Context) (Sizes, error) {
	pipe := f.c.Pipeline()
	read := f.sizes(ctx, pipe)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Sizes{}, fmt.Errorf("frontier: sizes: %w", err)
	}
	return read(), nil
}

// sizes queues the reads of the counts on pipe; the function it returns
// reads their answers once pipe ran.
func (f *shard) sizes(ctx context.Context, pipe redis.Pipeliner) func() Sizes {
	q := pipe.HGet(ctx, f.keys.Stats, "queued")
	i := pipe.ZCard(ctx, f.keys.Leases)
	d := pipe.ZCard(ctx, f.keys.Deferred)
	fl := pipe.LLen(ctx, f.keys.Failed)
	full := pipe.HLen(ctx, f.keys.AtCap())
	return func() Sizes {
		queued, _ := strconv.ParseInt(q.Val(), 10, 64) // absent: none
		return Sizes{queued, i.Val(), d.Val(), fl.Val(), full.Val()}
	}
}
