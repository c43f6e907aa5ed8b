package frontier

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

// ShardOf is the shard of host among n.
func ShardOf(host string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(host))
	return int(h.Sum32() % uint32(n))
}

// Home is the shard of a lease: where it must end.
func (f *Frontier) Home(l *Lease) int { return ShardOf(l.Host, len(f.fs)) }

// Wakes are the shards' wake channels.
func (f *Frontier) Wakes() []string {
	out := make([]string, len(f.fs))
	for i, sh := range f.fs {
		out[i] = sh.keys.Wake()
	}
	return out
}

// Exchange is Frontier.Exchange over the shards. The leases it ends or
// gives back must all belong to one shard (Home): the caller groups its
// pages so, and each exchange stays one atomic call there. Their links to
// other shards' hosts are Offered first, one call a shard; then the home
// shard's exchange ends the leases and pops; shards that had nothing to
// pop are skipped for a while, and others asked in turn, until want URLs
// are popped or every shard was asked.
func (f *Frontier) Exchange(ctx context.Context, done []Finished, back []*Lease, want int) (Exchanged, error) {
	if err := f.opened(); err != nil {
		return Exchanged{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	home := -1
	for _, l := range back {
		home = f.sameHome(home, f.Home(l))
	}
	for _, d := range done {
		home = f.sameHome(home, f.Home(d.Lease))
	}
	if home == -2 {
		return Exchanged{}, errSplit
	}
	// Links to other shards go first.
	own, ownIdx, queued, err := f.offerAway(ctx, done, home)
	if err != nil {
		return Exchanged{}, err
	}
	// The home shard ends the leases and pops; others pop in turn.
	now := f.now()
	out := Exchanged{Queued: queued, Held: []bool{}}
	out.Info.NextDue = -1
	asked := make([]bool, len(f.fs))
	if home >= 0 {
		pop := f.popFrom(home, now, want)
		x, err := f.fs[home].Exchange(ctx, own, back, pop)
		if err != nil {
			return Exchanged{}, f.in(home, err)
		}
		for d := range done {
			for j, i := range ownIdx[d] {
				queued[d][i] = x.Queued[d][j]
			}
		}
		out.Held = x.Held
		f.merge(&out, home, x, now, pop)
		asked[home] = pop > 0
	}
	for k := 0; k < len(f.fs) && len(out.Popped) < want; k++ {
		sh := (f.turn + k) % len(f.fs)
		if asked[sh] || f.idle[sh].After(now) {
			continue
		}
		pop := want - len(out.Popped)
		x, err := f.fs[sh].Exchange(ctx, nil, nil, pop)
		if err != nil {
			if len(out.Popped) > 0 || home >= 0 {
				// What was done stands, and this shard is asked again next
				// time; but if it lost this process's writes, the process
				// must forget what they taught it now.
				out.Forget = errors.Is(err, ErrRolledBack)
				out.Unasked = f.in(sh, err)
				break
			}
			return out, f.in(sh, err)
		}
		f.merge(&out, sh, x, now, pop)
		asked[sh] = true
	}
	f.turn = (f.turn + 1) % len(f.fs)
	if len(out.Popped) < want && out.Info.NextDue < 0 {
		// Every shard asked was empty; those not asked are idle: the
		// earliest of them is when to look again.
		for sh, t := range f.idle {
			if wait := max(t.Sub(now), 0); !asked[sh] && (out.Info.NextDue < 0 || wait < out.Info.NextDue) {
				out.Info.NextDue = wait
			}
		}
	}
	return out, nil
}

// offerAway offers the links of done to other shards' hosts to those
// shards, one call a shard, and returns done with only the links of the
// home shard's hosts left (ownIdx[d]: where those were in done[d]'s), and
// per page and link whether it was queued as new (for the links offered;
// the home shard's are filled in by its exchange).
func (f *Frontier) offerAway(ctx context.Context, done []Finished, home int) (own []Finished, ownIdx [][]int, queued [][]bool, err error) {
	queued = make([][]bool, len(done))
	type ref struct{ page, link int }
	offers := make([][]Item, len(f.fs))
	refs := make([][]ref, len(f.fs))
	own = make([]Finished, len(done))
	ownIdx = make([][]int, len(done))
	for d, fin := range done {
		queued[d] = make([]bool, len(fin.Outcome.Children))
		own[d] = fin
		own[d].Outcome.Children = nil
		for i, ch := range fin.Outcome.Children {
			sh := home
			if h, err := hostOf(ch.URL); err == nil {
				sh = ShardOf(h, len(f.fs))
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
		flags, err := f.fs[sh].Offer(ctx, items)
		if err != nil {
			return nil, nil, nil, f.in(sh, err)
		}
		for j, r := range refs[sh] {
			queued[r.page][r.link] = flags[j]
			if flags[j] {
				own[r.page].Outcome.Offered++
			}
		}
	}
	return own, ownIdx, queued, nil
}

// sameHome folds one more lease's shard into home (-1: none yet, -2: more
// than one).
func (f *Frontier) sameHome(home, sh int) int {
	switch home {
	case -1, sh:
		return sh
	default:
		return -2
	}
}

// popFrom is how many URLs the home shard's exchange should pop: all that
// are wanted, unless it had nothing lately.
func (f *Frontier) popFrom(home int, now time.Time, want int) int {
	if f.idle[home].After(now) {
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
func (f *Frontier) merge(out *Exchanged, sh int, x Exchanged, now time.Time, pop int) {
	out.Popped = append(out.Popped, x.Popped...)
	out.Info.Pages += x.Info.Pages
	out.Info.CrawlOver = out.Info.CrawlOver || x.Info.CrawlOver
	if pop == 0 {
		return
	}
	switch {
	case len(f.fs) == 1:
		// Nothing else to ask: the one shard is asked every time, and the
		// caller waits for NextDue (or a wake) before it asks again.
	case len(x.Popped) == 0:
		wait := x.Info.NextDue
		if wait < 0 {
			wait = idleFor
		}
		f.idle[sh] = now.Add(wait)
	default:
		f.idle[sh] = time.Time{}
	}
	if x.Info.NextDue >= 0 && (out.Info.NextDue < 0 || x.Info.NextDue < out.Info.NextDue) {
		out.Info.NextDue = x.Info.NextDue
	}
}

// Woken forgets that the shard of wake channel ch had nothing: a message
// there says it has URLs again.
func (f *Frontier) Woken(ch string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, sh := range f.fs {
		if sh.keys.Wake() == ch {
			f.idle[i] = time.Time{}
		}
	}
}

// Sizes adds up the shards' counts, read in one pipeline (on a Cluster,
// one round trip a master).
func (f *Frontier) Sizes(ctx context.Context) (Sizes, error) {
	pipe := f.fs[0].c.Pipeline()
	reads := make([]func() Sizes, len(f.fs))
	for i, sh := range f.fs {
		reads[i] = sh.sizes(ctx, pipe)
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
func (f *Frontier) HostQueues(ctx context.Context, n int) ([]HostQueue, int64, error) {
	var all []HostQueue
	var hosts int64
	for _, sh := range f.fs {
		top, h, err := sh.HostQueues(ctx, n)
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
func (f *Frontier) Heartbeat(ctx context.Context, worker string, leases []*Lease) (int, error) {
	by := make([][]*Lease, len(f.fs))
	for _, l := range leases {
		by[f.Home(l)] = append(by[f.Home(l)], l)
	}
	held, err := f.fs[0].Heartbeat(ctx, worker, by[0])
	if err != nil {
		return 0, err
	}
	for sh := 1; sh < len(f.fs); sh++ {
		if len(by[sh]) == 0 {
			continue
		}
		n, err := f.fs[sh].Heartbeat(ctx, "", by[sh])
		if err != nil {
			return held, f.in(sh, err)
		}
		held += n
	}
	return held, nil
}

// Enqueue is Frontier.Enqueue over the shards: each item to its host's
// shard, one call a shard; the answers in the items' order.
func (f *Frontier) Enqueue(ctx context.Context, items []Item) ([]bool, error) {
	return f.enqueue(ctx, items, (*shard).Enqueue)
}

// EnqueueAll is Frontier.EnqueueAll over the shards.
func (f *Frontier) EnqueueAll(ctx context.Context, items []Item) ([]bool, error) {
	return f.enqueue(ctx, items, (*shard).EnqueueAll)
}

func (f *Frontier) enqueue(ctx context.Context, items []Item, fn func(*shard, context.Context, []Item) ([]bool, error)) ([]bool, error) {
	if err := f.opened(); err != nil {
		return nil, err
	}
	by := make([][]Item, len(f.fs))
	at := make([][]int, len(f.fs))
	for i, it := range items {
		host, err := hostOf(it.URL)
		if err != nil {
			return nil, err
		}
		sh := ShardOf(host, len(f.fs))
		by[sh], at[sh] = append(by[sh], it), append(at[sh], i)
	}
	out := make([]bool, len(items))
	for sh, part := range by {
		if len(part) == 0 {
			continue
		}
		fresh, err := fn(f.fs[sh], ctx, part)
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
func (f *Frontier) Defer(ctx context.Context, l *Lease, item Item, delay time.Duration) error {
	return f.fs[f.Home(l)].Defer(ctx, l, item, delay)
}

// Requeue is Frontier.Requeue in the lease's shard.
func (f *Frontier) Requeue(ctx context.Context, l *Lease, wait time.Duration) error {
	return f.fs[f.Home(l)].Requeue(ctx, l, wait)
}

// SetHostDelay is Frontier.SetHostDelay in host's shard.
func (f *Frontier) SetHostDelay(ctx context.Context, host string, delay time.Duration, back *Lease) (bool, error) {
	return f.fs[ShardOf(host, len(f.fs))].SetHostDelay(ctx, host, delay, back)
}

// Workers lists the crawl's live workers (the registry is the first shard's).
func (f *Frontier) Workers(ctx context.Context) ([]string, error) { return f.fs[0].Workers(ctx) }

// Lapsed lists the registered workers whose registration lapsed.
func (f *Frontier) Lapsed(ctx context.Context) ([]string, error) { return f.fs[0].Lapsed(ctx) }

// Register adds worker to the crawl's registry (in the first shard).
func (f *Frontier) Register(ctx context.Context, worker string) (time.Duration, error) {
	return f.fs[0].Register(ctx, worker)
}

// Deregister removes a stopped worker from the registry.
func (f *Frontier) Deregister(ctx context.Context, worker string) error {
	return f.fs[0].Deregister(ctx, worker)
}
