package frontier

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Shards is a crawl's frontier split by host over shards, each a Frontier
// under a hash tag of its own, so that a Redis Cluster spreads a crawl over
// its masters. A host belongs to one shard (ShardOf): its queue, its
// Bloom filter, its leases and its records live there together, so that
// ending a lease, recording its page and queueing its links stays one
// atomic script in one shard. What crosses shards:
//
//   - a page's links to hosts of other shards are Offered to those shards
//     before the page's own exchange, so a crash between the two calls
//     loses nothing (the lease lives on, and the page is fetched again);
//   - pops rotate over the shards, skipping for a while those that had
//     nothing to give;
//   - whether the crawl is over is decided over two sweeps of every shard
//     (Schedule), since no one script can see them all.
//
// One shard is the layout of crawls before shards, and Shards of one
// frontier behaves exactly as that frontier.
type Shards struct {
	fs  []*Frontier
	now func() time.Time

	mu   sync.Mutex  // Exchange and Schedule serialize on it
	turn int         // the shard the next pop starts from
	idle []time.Time // a shard that popped nothing is not asked before this
	// The previous sweep: whether every shard was empty, and each shard's
	// enqueued counter.
	lastEmpty    bool
	lastEnqueued []int64
	sweptEpoch   int64 // the epoch of the last whole sweep
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

// NewShards joins the frontiers of a crawl's shards, shard i at fs[i].
func NewShards(fs []*Frontier) *Shards {
	return &Shards{fs: fs, now: time.Now, idle: make([]time.Time, len(fs)), lastEnqueued: make([]int64, len(fs))}
}

// All are the shards' frontiers, shard i at i.
func (s *Shards) All() []*Frontier { return s.fs }

// Of is the frontier of host's shard.
func (s *Shards) Of(host string) *Frontier { return s.fs[ShardOf(host, len(s.fs))] }

// Home is the shard of a lease: where it must end.
func (s *Shards) Home(l *Lease) int { return ShardOf(l.Host, len(s.fs)) }

// Wakes are the shards' wake channels.
func (s *Shards) Wakes() []string {
	out := make([]string, len(s.fs))
	for i, f := range s.fs {
		out[i] = f.keys.Wake()
	}
	return out
}

// errSplit: an Exchange was given leases of more than one shard.
var errSplit = errors.New("frontier: an exchange ends leases of one shard only")

// Exchange is Frontier.Exchange over the shards. The leases it ends or
// gives back must all belong to one shard (Home): the caller groups its
// pages so, and each exchange stays one atomic call there. Their links to
// other shards' hosts are Offered first, one call a shard; then the home
// shard's exchange ends the leases and pops; shards that had nothing to
// pop are skipped for a while, and others asked in turn, until want URLs
// are popped or every shard was asked.
func (s *Shards) Exchange(ctx context.Context, done []Finished, back []*Lease, want int) (Exchanged, error) {
	if len(s.fs) == 1 {
		return s.fs[0].Exchange(ctx, done, back, want)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	home := -1
	for _, l := range back {
		home = s.sameHome(home, s.Home(l))
	}
	for _, d := range done {
		home = s.sameHome(home, s.Home(d.Lease))
	}
	if home == -2 {
		return Exchanged{}, errSplit
	}
	// Links to other shards go first.
	queued := make([][]bool, len(done))
	type ref struct{ page, link int }
	offers := make([][]Item, len(s.fs))
	refs := make([][]ref, len(s.fs))
	own := make([]Finished, len(done))
	ownIdx := make([][]int, len(done))
	for d, f := range done {
		queued[d] = make([]bool, len(f.Outcome.Children))
		own[d] = f
		own[d].Outcome.Children = nil
		for i, ch := range f.Outcome.Children {
			sh := home
			if h, err := hostOf(ch.URL); err == nil {
				sh = ShardOf(h, len(s.fs))
			} // else: the home shard's exchange reports the bad URL
			if sh == home {
				own[d].Outcome.Children = append(own[d].Outcome.Children, ch)
				ownIdx[d] = append(ownIdx[d], i)
				continue
			}
			offers[sh] = append(offers[sh], ch)
			refs[sh] = append(refs[sh], ref{d, i})
		}
	}
	for sh, items := range offers {
		if len(items) == 0 {
			continue
		}
		flags, err := s.fs[sh].Offer(ctx, items)
		if err != nil {
			return Exchanged{}, fmt.Errorf("shard %d: %w", sh, err)
		}
		for j, r := range refs[sh] {
			queued[r.page][r.link] = flags[j]
			if flags[j] {
				own[r.page].Outcome.Offered++
			}
		}
	}
	// The home shard ends the leases and pops; others pop in turn.
	now := s.now()
	out := Exchanged{Queued: queued, Held: []bool{}}
	out.Info.NextDue = -1
	asked := make([]bool, len(s.fs))
	if home >= 0 {
		pop := s.popFrom(home, now, want)
		x, err := s.fs[home].Exchange(ctx, own, back, pop)
		if err != nil {
			return Exchanged{}, fmt.Errorf("shard %d: %w", home, err)
		}
		for d := range done {
			for j, i := range ownIdx[d] {
				queued[d][i] = x.Queued[d][j]
			}
		}
		out.Held = x.Held
		s.merge(&out, home, x, now, pop)
		asked[home] = pop > 0
	}
	for k := 0; k < len(s.fs) && len(out.Popped) < want; k++ {
		sh := (s.turn + k) % len(s.fs)
		if asked[sh] || s.idle[sh].After(now) {
			continue
		}
		pop := want - len(out.Popped)
		x, err := s.fs[sh].Exchange(ctx, nil, nil, pop)
		if err != nil {
			if len(out.Popped) > 0 || home >= 0 {
				// What was done stands, and this shard is asked again next
				// time; but if it lost this process's writes, the process
				// must forget what they taught it now.
				out.Forget = errors.Is(err, ErrRolledBack)
				out.Unasked = fmt.Errorf("shard %d: %w", sh, err)
				break
			}
			return out, fmt.Errorf("shard %d: %w", sh, err)
		}
		s.merge(&out, sh, x, now, pop)
		asked[sh] = true
	}
	s.turn = (s.turn + 1) % len(s.fs)
	if len(out.Popped) < want && out.Info.NextDue < 0 {
		// Every shard asked was empty; those not asked are idle: the
		// earliest of them is when to look again.
		for sh, t := range s.idle {
			if wait := max(t.Sub(now), 0); !asked[sh] && (out.Info.NextDue < 0 || wait < out.Info.NextDue) {
				out.Info.NextDue = wait
			}
		}
	}
	return out, nil
}

// sameHome folds one more lease's shard into home (-1: none yet, -2: more
// than one).
func (s *Shards) sameHome(home, sh int) int {
	switch home {
	case -1, sh:
		return sh
	default:
		return -2
	}
}

// popFrom is how many URLs the home shard's exchange should pop: all that
// are wanted, unless it had nothing lately.
func (s *Shards) popFrom(home int, now time.Time, want int) int {
	if s.idle[home].After(now) {
		return 0
	}
	return want
}

// idleFor is how long a shard that popped nothing is left alone: until
// its next host is due, or a second when nothing is queued there (a
// worker woken by a shard's wake channel asks at once anyway).
const idleFor = time.Second

// merge adds shard sh's exchange x, asked for pop URLs, to out. A shard
// not asked for any tells nothing of what it has queued.
func (s *Shards) merge(out *Exchanged, sh int, x Exchanged, now time.Time, pop int) {
	out.Popped = append(out.Popped, x.Popped...)
	out.Info.Pages += x.Info.Pages
	out.Info.CrawlOver = out.Info.CrawlOver || x.Info.CrawlOver
	if pop == 0 {
		return
	}
	if len(x.Popped) == 0 {
		wait := x.Info.NextDue
		if wait < 0 {
			wait = idleFor
		}
		s.idle[sh] = now.Add(wait)
	} else {
		s.idle[sh] = time.Time{}
	}
	if x.Info.NextDue >= 0 && (out.Info.NextDue < 0 || x.Info.NextDue < out.Info.NextDue) {
		out.Info.NextDue = x.Info.NextDue
	}
}

// Woken forgets that the shard of wake channel ch had nothing: a message
// there says it has URLs again.
func (s *Shards) Woken(ch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.fs {
		if f.keys.Wake() == ch {
			s.idle[i] = time.Time{}
		}
	}
}

// Sizes adds up the shards' counts, read in one pipeline (on a Cluster,
// one round trip a master).
func (s *Shards) Sizes(ctx context.Context) (Sizes, error) {
	pipe := s.fs[0].c.Pipeline()
	reads := make([]func() Sizes, len(s.fs))
	for i, f := range s.fs {
		reads[i] = f.sizes(ctx, pipe)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Sizes{}, fmt.Errorf("frontier: sizes: %w", err)
	}
	var total Sizes
	for _, read := range reads {
		sz := read()
		total.Queued += sz.Queued
		total.InFlight += sz.InFlight
		total.Deferred += sz.Deferred
		total.Failed += sz.Failed
	}
	return total, nil
}

// HostQueues is Frontier.HostQueues over the shards.
func (s *Shards) HostQueues(ctx context.Context, n int) ([]HostQueue, int64, error) {
	var all []HostQueue
	var hosts int64
	for _, f := range s.fs {
		top, h, err := f.HostQueues(ctx, n)
		if err != nil {
			return nil, 0, err
		}
		all, hosts = append(all, top...), hosts+h
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Queued > all[j].Queued })
	return all[:min(n, len(all))], hosts, nil
}

// Heartbeat records that worker is alive (in the first shard, where the
// crawl's registry is) and extends its leases, each in its own shard.
func (s *Shards) Heartbeat(ctx context.Context, worker string, leases []*Lease) (int, error) {
	if len(s.fs) == 1 {
		return s.fs[0].Heartbeat(ctx, worker, leases)
	}
	by := make([][]*Lease, len(s.fs))
	for _, l := range leases {
		by[s.Home(l)] = append(by[s.Home(l)], l)
	}
	held, err := s.fs[0].Heartbeat(ctx, worker, by[0])
	if err != nil {
		return 0, err
	}
	for sh := 1; sh < len(s.fs); sh++ {
		if len(by[sh]) == 0 {
			continue
		}
		n, err := s.fs[sh].Heartbeat(ctx, "", by[sh])
		if err != nil {
			return held, fmt.Errorf("shard %d: %w", sh, err)
		}
		held += n
	}
	return held, nil
}

// Enqueue is Frontier.Enqueue over the shards: each item to its host's
// shard, one call a shard; the answers in the items' order.
func (s *Shards) Enqueue(ctx context.Context, items []Item) ([]bool, error) {
	return s.enqueue(ctx, items, (*Frontier).Enqueue)
}

// EnqueueAll is Frontier.EnqueueAll over the shards.
func (s *Shards) EnqueueAll(ctx context.Context, items []Item) ([]bool, error) {
	return s.enqueue(ctx, items, (*Frontier).EnqueueAll)
}

func (s *Shards) enqueue(ctx context.Context, items []Item, fn func(*Frontier, context.Context, []Item) ([]bool, error)) ([]bool, error) {
	if len(s.fs) == 1 {
		return fn(s.fs[0], ctx, items)
	}
	by := make([][]Item, len(s.fs))
	at := make([][]int, len(s.fs))
	for i, it := range items {
		host, err := hostOf(it.URL)
		if err != nil {
			return nil, err
		}
		sh := ShardOf(host, len(s.fs))
		by[sh], at[sh] = append(by[sh], it), append(at[sh], i)
	}
	out := make([]bool, len(items))
	for sh, part := range by {
		if len(part) == 0 {
			continue
		}
		fresh, err := fn(s.fs[sh], ctx, part)
		if err != nil {
			return nil, err
		}
		for j, i := range at[sh] {
			out[i] = fresh[j]
		}
	}
	return out, nil
}

// Defer is Frontier.Defer in the lease's shard.
func (s *Shards) Defer(ctx context.Context, l *Lease, item Item, delay time.Duration) error {
	return s.fs[s.Home(l)].Defer(ctx, l, item, delay)
}

// Requeue is Frontier.Requeue in the lease's shard.
func (s *Shards) Requeue(ctx context.Context, l *Lease, wait time.Duration) error {
	return s.fs[s.Home(l)].Requeue(ctx, l, wait)
}

// Workers lists the crawl's live workers (the registry is the first shard's).
func (s *Shards) Workers(ctx context.Context) ([]string, error) { return s.fs[0].Workers(ctx) }

// Lapsed lists the registered workers whose registration lapsed.
func (s *Shards) Lapsed(ctx context.Context) ([]string, error) { return s.fs[0].Lapsed(ctx) }

// Register adds worker to the crawl's registry (in the first shard).
func (s *Shards) Register(ctx context.Context, worker string) (time.Duration, error) {
	return s.fs[0].Register(ctx, worker)
}

// Deregister removes a stopped worker from the registry.
func (s *Shards) Deregister(ctx context.Context, worker string) error {
	return s.fs[0].Deregister(ctx, worker)
}

// MigrateOldQueue moves an older version's queue (only ever in the first
// shard's place) to the queues.
func (s *Shards) MigrateOldQueue(ctx context.Context) (int, error) {
	return s.fs[0].MigrateOldQueue(ctx)
}
