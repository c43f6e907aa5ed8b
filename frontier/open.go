package frontier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier/control"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/nearpages"
	"github.com/redcrawl/crawler/frontier/payloads"
	"github.com/redcrawl/crawler/frontier/perhost"
	"github.com/redcrawl/crawler/frontier/records"
	"github.com/redcrawl/crawler/frontier/recrawl"
	"github.com/redcrawl/crawler/frontier/registry"
	"github.com/redcrawl/crawler/frontier/rendering"
	"github.com/redis/go-redis/v9"
)

// Frontier is a crawl's reliable queue, and the owner of every key the
// crawl keeps in Redis (package doc). Safe for concurrent use.
//
// It is split by host over Options.Shards shards, each a set of the keys
// under a hash tag of its own, so that a Redis Cluster spreads a crawl
// over its masters; a crawl of one shard is a count of one, not another
// type. A host belongs to one shard (ShardOf): its queue, its Bloom
// filter, its leases, its token bucket, its robots.txt and its records
// live there together, so that ending a lease, recording its page and
// queueing its links stays one atomic script in one shard. What crosses
// shards:
//
//   - a page's links to hosts of other shards are offered to those shards
//     before the page's own exchange, so a crash between the two calls
//     loses nothing (the lease lives on, and the page is fetched again);
//   - pops rotate over the shards, skipping for a while those that had
//     nothing to give;
//   - whether the crawl is over is decided over two sweeps of every shard
//     (Schedule), since no one script can see them all; the page budget
//     is shared out among them.
//
// The crawl's registry of workers, its settings and its scheduler's lock
// are the first shard's.
type Frontier struct {
	// Options are read at each call: a test may change them between calls.
	Options
	*store

	// The crawl's state beside the queue, each its own type (its doc
	// says its keys), on the same shards.
	Records  records.Streams  // what the crawl found: each shard's results stream
	Registry Registry         // the workers: registrations, heartbeats, leases renewed
	Events   events.Log       // the crawl's event log, for people
	Digests  payloads.Index   // the payload digests archived (--dedup-payloads)
	Near     nearpages.Index  // each host's pages' signatures (--near-duplicates)
	Visits   recrawl.Schedule // the recrawl schedule: each fetched URL's next visit
	// Hosts are the controls and views of single hosts: their rules,
	// pauses, delays, queues and server addresses (package perhost).
	Hosts Hosts
	// Render is what rendering shares: the lanes, the samples a crawl
	// learns from, the subresource cache and the tokens of subresources.
	Render rendering.Shared
	// Scope is the seeds' hosts, the crawl's scope.
	Scope control.Scope
	// Control is what a person changes of the whole crawl while it runs:
	// its settings version and its pause.
	Control control.Crawl

	now func() time.Time

	mu    sync.Mutex // Exchange and Schedule serialize on it
	cross *crossing  // what an exchange over the shards keeps between calls
	end   endWatch   // the scheduler's: whether the crawl over the shards is over
}

// Options are what a crawl's settings say of its frontier.
type Options struct {
	// Shards is how many shards the crawl is split over (at least 1,
	// fixed when it is seeded).
	Shards int
	// Instance is the crawl's instance id as this process read it (its
	// config's InstanceField; "" for a crawl seeded before ids existed).
	// Exchanges, sweeps and heartbeats carry it, and a crawl whose config
	// holds another (made anew under the same name since) refuses them as
	// a gone crawl would (ErrGone): nothing of one crawl is written into
	// another.
	Instance string
	// Lease is how long a popped item is held without a heartbeat (10 s
	// when 0).
	Lease time.Duration
	// Policy is what the settings say of the pops, which may change
	// while the crawl runs (SetPolicy).
	Policy
	// Continuous: the crawl never ends on its own; the sweep moves each
	// URL back to its host's queue when its revisit is due (frontier/recrawl).
	Continuous bool
	// ResultsKept bounds the results streams together (ResultsKept when
	// 0), shared out among the shards: the memory bound past which a
	// lagging export group's oldest unread records are dropped.
	ResultsKept int64
	// Clock is this process's clock (time.Now when nil), which a reply's
	// arrival is read on: the popped URLs' token windows
	// (Lease.NotBefore, Lease.Deadline) are placed on it. Tests of the
	// crawl's timing give a simulated one, with Redis's (miniredis's) set
	// to match.
	Clock func() time.Time
	// OutboxAge is how long an outbox entry waits for its worker's ack
	// before the scheduler's sweep offers its links again and acks it
	// itself (30 s when 0): only a worker that died between the calls of
	// one pipeline, or whose calls to another shard failed, leaves one
	// that long (Frontier.Exchange).
	OutboxAge time.Duration
	// Lane is the lane this process's pops take URLs from: "" (LanePlain)
	// or LaneRender, for a worker with a browser. A host is in one lane
	// (SetLane), and a pop sees only its lane's hosts; their politeness is
	// the same whichever lane takes their tokens.
	Lane string
}

// Policy is what a crawl's settings say of its pops that may change while
// it runs ('crawler set'): the rate, the budget, the caps. Every exchange
// carries the Version its values come from, and a shard whose settings
// are newer (keyspace.Keys.Settings) pops nothing for it: no URL is handed out
// under settings older than the shard's (exchange_call.lua's ex_call).
type Policy struct {
	// HostRate is each host's requests a second (0: no limit) and
	// HostBurst its bucket's size (1 when 0): a URL is popped only with a
	// token of its host's bucket, taken in the same call, and a host
	// without one is not offered until it has (politeness's token bucket,
	// applied where URLs are handed out). A host's own Crawl-delay
	// (Hosts.SetDelay) and pauses (politeness.Limiter.Pause on RateKey) hold
	// with any rate, none included.
	HostRate  float64
	HostBurst int
	// PopAhead is the window of a pop: a host whose next token is due
	// within it is popped too, its token reserved, and the URL's lease
	// says when to fetch it (Lease.NotBefore). Calls that far apart then
	// lose no token's time.
	PopAhead time.Duration
	// DelayFactor, when not 0, is adaptive politeness: each finished page
	// sets its host's least interval to DelayFactor times its fetch time
	// (Outcome.FetchTime), at most MaxDelay, in the host's bucket, which
	// every pop keeps to.
	DelayFactor float64
	MaxDelay    time.Duration
	// PageBudget, when not 0, is the most pages the whole crawl fetches:
	// a pop hands out no more URLs than pages fetched plus URLs in flight
	// leave room for, and reports the page count (PopInfo.Pages). With
	// several shards, each pops within its share (Schedule).
	PageBudget int64
	// HostPageCap, when not 0, is the most pages fetched from one host:
	// once a host has them, its queued URLs are dropped (and counted)
	// when it comes up for a pop. URLs of it in flight then may still add
	// a few. New links of a host past twice its cap, less its pages, are
	// not queued (counted): its queue stays bounded whatever its pages
	// and sitemaps offer.
	HostPageCap int64
	// HostConcurrency, when not 0, is the most requests in flight to one
	// host, across every worker (seed --host-concurrency): a URL is
	// granted only with one of its host's slots, taken in the same call
	// as its token and held by its lease (frontier/queue/hostslots.lua),
	// so a worker killed mid-request frees its slots when its leases
	// lapse.
	HostConcurrency int
	// Depth: new URLs go to the front of their hosts' lists (seed --order
	// depth: each host's queue a stack, the crawl depth-first within a
	// host), not the back (breadth-first).
	Depth bool
	// Version is the crawl's settings version these come from (0: as
	// seeded, never changed).
	Version int64
	// PerAddress: hosts that resolve to one address also share its
	// bucket, of HostRate and HostBurst (seed --politeness ip): a pop
	// takes a token of each (addrs.lua). A host whose address is not
	// known is not popped; the reply asks the worker to resolve it
	// (PopInfo.Resolve, SetAddresses).
	PerAddress bool
}

// outboxAge is OutboxAge, or its default.
func (o *Options) outboxAge() time.Duration {
	if o.OutboxAge == 0 {
		return 30 * time.Second
	}
	return o.OutboxAge
}

// New returns crawl name's frontier without touching Redis and without
// its Bloom filters: enough to read it (Sizes, Stats, Records, Workers …),
// to register workers and to delete it, not to queue URLs. Open and Create
// attach the filters.
func New(c redis.UniversalClient, name string, o Options) (*Frontier, error) {
	if err := keyspace.CheckName(name); err != nil {
		return nil, err
	}
	if o.Shards < 1 || o.Shards > MaxShards {
		return nil, fmt.Errorf("frontier: %d shards: want 1 to %d", o.Shards, MaxShards)
	}
	if o.Lease == 0 {
		o.Lease = 10 * time.Second
	}
	f := &Frontier{Options: o, now: o.now, cross: newCrossing(o.Shards)} // the process's clock (Options.Clock), as the leases' windows
	f.store = &store{name: name, c: c, fs: make([]*shard, o.Shards), o: &f.Options, pm: &sync.RWMutex{}}
	for i := range f.fs {
		f.fs[i] = newShard(c, keyspace.KeysForShard(name, i), &f.Options, f.pm, i, o.Shards)
	}
	f.Events = events.New(c, keyspace.Tag(name, 0)+"events")
	streams := make([]records.Shard, len(f.fs))
	for i, sh := range f.fs {
		streams[i] = records.Shard{Results: sh.keys.Results, Stats: sh.keys.Stats, Cap: sh.resultsCap}
	}
	f.Records = records.New(c, streams, f.in)
	set := keyspace.Set{Name: name, C: c, Keys: make([]keyspace.Keys, len(f.fs)), Instance: o.Instance, Now: f.now, Pace: func() keyspace.Pace {
		p := f.PolicyNow()
		return keyspace.Pace{HostRate: p.HostRate, HostBurst: p.HostBurst, PerAddress: p.PerAddress}
	}}
	for i, sh := range f.fs {
		set.Keys[i] = sh.keys
	}
	f.Render, f.Digests, f.Control = rendering.Shared{Set: set}, payloads.Index{Set: set}, control.Crawl{Set: set}
	f.Near = nearpages.Index{Set: set}
	f.Scope = control.Scope{Set: set}
	f.Registry = Registry{Roll: registry.Roll{Set: set, Lease: func() time.Duration { return f.Lease }}, store: f.store}
	f.Visits = recrawl.Schedule{Set: set, Continuous: func() bool { return f.Continuous }}
	f.Hosts = Hosts{Controls: perhost.Controls{Set: set, ResultsCap: f.fs[0].resultsCap}, store: f.store}
	return f, nil
}

// store is what every part of a crawl's Redis state shares: the crawl's
// name, the client, the shards (hosts laid out by ShardOf) and the
// options, read at each call.
type store struct {
	name string
	c    redis.UniversalClient
	fs   []*shard
	o    *Options
	pm   *sync.RWMutex // guards o.Policy, which SetPolicy changes while calls read it
}

// SetPolicy replaces the pops' policy (the settings changed: 'crawler
// set'); calls made from now on carry it.
func (f *store) SetPolicy(p Policy) {
	f.pm.Lock()
	defer f.pm.Unlock()
	f.o.Policy = p
}

// PolicyNow is the pops' policy in force.
func (f *store) PolicyNow() Policy {
	f.pm.RLock()
	defer f.pm.RUnlock()
	return f.o.Policy
}

// MaxShards bounds Options.Shards: each exchange may touch every shard.
const MaxShards = 256

// Open returns the frontier of a seeded crawl, its Bloom filters attached.
func Open(ctx context.Context, c redis.UniversalClient, name string, o Options) (*Frontier, error) {
	f, err := New(c, name, o)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(f.fs))
	for i := range f.fs {
		keys[i] = keyspace.SeenKey(name, i)
	}
	filters, err := dedup.AttachAll(ctx, c, keys)
	if err != nil {
		return nil, fmt.Errorf("crawl %q: %w", name, err)
	}
	for i, sh := range f.fs {
		sh.seen = filters[i]
	}
	return f, nil
}

// Create makes what the crawl's shards need, or finds it made (seeding
// again changes nothing): each shard's Bloom filter, sized for its share
// of bloom's capacity; for a shard other than the first its marker, by
// which its scripts know the crawl exists (the first shard's is the
// settings hash, StoreConfig); and with a page budget over several shards,
// each shard's first share of it (Shares).
func Create(ctx context.Context, c redis.UniversalClient, name string, o Options, bloom dedup.Params) (*Frontier, error) {
	f, err := New(c, name, o)
	if err != nil {
		return nil, err
	}
	bloom.Capacity = (bloom.Capacity + int64(o.Shards) - 1) / int64(o.Shards)
	shares := Shares(o.PageBudget, o.Shards)
	for i, sh := range f.fs {
		if i > 0 {
			if err := c.Set(ctx, sh.keys.Config, cmp.Or(o.Instance, "1"), 0).Err(); err != nil {
				return nil, f.in(i, err)
			}
		}
		if sh.seen, err = dedup.Open(ctx, c, keyspace.SeenKey(name, i), bloom); err != nil {
			return nil, f.in(i, fmt.Errorf("crawl %q: %w", name, err))
		}
		if sh.sharded && o.PageBudget > 0 {
			// A share is set once: seeding again leaves the scheduler's moves.
			if err := c.HSetNX(ctx, sh.keys.Stats, "allow", shares[i]).Err(); err != nil {
				return nil, f.in(i, err)
			}
		}
	}
	return f, nil
}

// in names shard i in err, when there is more than one.
func (f *store) in(i int, err error) error { return keyspace.In(len(f.fs), i, err) }

// opened refuses a frontier without its Bloom filters.
func (f *Frontier) opened() error {
	if f.fs[0].seen == nil {
		return errNotOpen
	}
	return nil
}

// errSplit: an Exchange was given leases of more than one shard.
var errSplit = errors.New("frontier: an exchange ends leases of one shard only")

// now reads the process's clock (Options.Clock).
func (o *Options) now() time.Time {
	if o.Clock != nil {
		return o.Clock()
	}
	return time.Now()
}

// Hosts are the controls and views of single hosts (package perhost), and
// SetDelay, which may decide a lease.
type Hosts struct {
	perhost.Controls
	store *store
}
