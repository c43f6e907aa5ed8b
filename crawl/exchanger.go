package crawl

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redis/go-redis/v9"
)

// The exchanger is the one goroutine of a worker process that talks to the
// frontier for its fetch loops. It keeps a few leased URLs ready for them
// and sends the pages they finish, many to a call, in one atomic
// frontier.Exchange that also pops the next URLs. When to call, and with
// what, is policy's to decide (policy.go); this file is the I/O around it.
//
// Nothing is lost by batching: a leased URL in the ready buffer, or a page
// waiting to be sent, is still in Redis's lease set under a lease this
// process's heartbeat renews; if the process dies, the lease runs out and
// the scheduler queues the URL again. A graceful stop sends every finished
// page and gives the unstarted URLs back to the front of their queues.
type exchanger struct {
	c            redis.UniversalClient
	fr           *frontier.Frontier
	known        *known
	held         *sync.Map // lease id -> *frontier.Lease: what the heartbeat renews
	out          *recordWriter
	counters     *Counters
	log          *slog.Logger
	exitWhenDone bool
	budget       bool            // the crawl has a page budget
	warc         *archive.Writer // nil: no archive; refused pages' records are marked there
	pages        *atomic.Int64   // the crawl's pages fetched, as the last exchange said
	metrics      *metrics
	crawlDone    func()       // the crawl is finished: stop the worker
	gone         *atomic.Bool // the crawl is gone from Redis
	markGone     func()

	p       *policy
	ready   chan leased   // leased URLs waiting for a fetch loop
	entries chan entry    // what the loops are done with; closed when they are gone
	bell    chan struct{} // a loop found nothing ready (one slot)
	waiting atomic.Int32  // loops waiting for a URL now
	pending []entry       // entries not yet sent
	sub     *redis.PubSub // the crawl's wake channel
	wakeCh  <-chan *redis.Message
}

// leased is a URL under this process's lease, ready to be fetched.
type leased struct {
	lease *frontier.Lease
	info  frontier.PopInfo
}

// entry is a page a loop is done with, or (back set) a lease it gives back
// unused.
type entry struct {
	page frontier.Finished
	rec  Record
	back *frontier.Lease
}

func newExchanger(loops int) *exchanger {
	capacity := 6 * loops // prefetch: six URLs a loop
	return &exchanger{p: newPolicy(capacity), ready: make(chan leased, capacity),
		entries: make(chan entry, 2*loops+2), // a loop never waits long to hand in
		bell:    make(chan struct{}, 1)}
}

// take gives a fetch loop its next URL; false once the worker stops.
func (x *exchanger) take(stop context.Context) (leased, bool) {
	select {
	case l := <-x.ready:
		return x.started(stop, l)
	default:
	}
	x.waiting.Add(1)
	defer x.waiting.Add(-1)
	select {
	case x.bell <- struct{}{}:
	default:
	}
	select {
	case l := <-x.ready:
		return x.started(stop, l)
	case <-stop.Done():
		return leased{}, false
	}
}

// started gives a URL taken after the stop back, rather than start it.
func (x *exchanger) started(stop context.Context, l leased) (leased, bool) {
	if stop.Err() != nil {
		x.entries <- entry{back: l.lease}
		return leased{}, false
	}
	return l, true
}

// finish hands a page's outcome in for the next exchange.
func (x *exchanger) finish(page frontier.Finished, rec Record) {
	x.entries <- entry{page: page, rec: rec}
}

// giveBack hands in a lease unused: the next call gives it back (Redis
// queues the URL again if it still holds the lease).
func (x *exchanger) giveBack(l *frontier.Lease) {
	x.entries <- entry{back: l}
}

// close tells the exchanger that no loop will hand in anything again.
func (x *exchanger) close() { close(x.entries) }

// run is the exchanger's loop. It ends after close, once everything handed
// in was sent (or, with Redis unreachable, given up on: the leases expire
// and the scheduler queues those URLs again), or when the crawl is gone.
func (x *exchanger) run(stop, work context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	x.sub = x.c.Subscribe(work, x.fr.Wakes()...)
	defer x.sub.Close()
	x.wakeCh = x.sub.Channel()
	for {
		if x.gone.Load() {
			// Nothing to send, nobody to send it to: take what the loops
			// hand in until they have all returned.
			if x.entries != nil {
				for range x.entries {
				}
			}
			return
		}
		stopping := stop.Err() != nil
		for stopping && len(x.ready) > 0 { // URLs not started go back with the last call
			x.pending = append(x.pending, entry{back: (<-x.ready).lease})
			x.p.added(time.Now(), 1)
		}
		x.drain()
		now := time.Now()
		c, ok, until := x.p.decide(now, world{ready: len(x.ready), stopping: stopping})
		if ok {
			if !x.call(work, now, c) {
				return
			}
			continue
		}
		if x.p.done() {
			return
		}
		timer.Reset(max(until.Sub(now), time.Millisecond))
		x.await(stop, stopping, timer)
		timer.Stop()
	}
}

// drain hears, without waiting, what arrived during the last call. With
// Redis slow (a call of a second or more), the next decision is due the
// moment a call returns; without this it would see no finished page, ask
// for another pop, and never read what the loops handed in.
func (x *exchanger) drain() {
	for i := 0; i < 4*cap(x.ready)+16; i++ {
		select {
		case e, ok := <-x.entries:
			x.handedIn(e, ok)
		case <-x.bell:
			x.p.bell()
		case m := <-x.wakeCh:
			x.woken(m)
		default:
			return
		}
	}
}

// await blocks until something the policy must hear of happens.
func (x *exchanger) await(stop context.Context, stopping bool, timer *time.Timer) {
	stopCh := stop.Done()
	if stopping {
		stopCh = nil
	}
	select {
	case e, ok := <-x.entries:
		x.handedIn(e, ok)
	case <-x.bell:
		x.p.bell()
	case m := <-x.wakeCh:
		x.woken(m)
	case <-stopCh:
	case <-timer.C:
	}
}

// handedIn: a fetch loop handed in e, or (ok false) the loops are all gone.
func (x *exchanger) handedIn(e entry, ok bool) {
	if !ok {
		x.p.loopsClosed()
		x.entries = nil
		return
	}
	x.pending = append(x.pending, e)
	x.p.added(time.Now(), 1)
}

// woken: a message on the crawl's wake channels.
func (x *exchanger) woken(m *redis.Message) {
	if m == nil { // the subscription was closed (its client was): polling alone from now on
		x.wakeCh = nil
		return
	}
	x.fr.Woken(m.Channel)
	x.p.wake(m.Payload, int(x.waiting.Load()))
}

// call makes the exchange c, decided at now, and hands out what it
// brought. It returns false to give up.
func (x *exchanger) call(work context.Context, now time.Time, c call) bool {
	batch, rest := x.oneShard(c.send)
	c.send = len(batch)
	// Never cancelled by the stop: an exchange cut off halfway could leave
	// popped URLs leased to nobody until their lease expires.
	ctx, cancel := context.WithTimeout(work, 30*time.Second)
	start := time.Now()
	res, sent, err := x.exchange(ctx, batch, c.want)
	x.metrics.exchange.Observe(time.Since(start).Seconds())
	cancel()
	switch {
	case errors.Is(err, frontier.ErrGone):
		x.markGone()
		return true
	case errors.Is(err, frontier.ErrReplyLost):
		// An earlier call whose reply never came (a timeout) went through:
		// nothing was lost, the batch goes again and Redis records nothing
		// twice.
		x.log.Info("an exchange whose reply was lost had gone through; sending its batch again")
		return true
	case errors.Is(err, frontier.ErrRolledBack):
		// Nothing was written. Forget what the lost writes taught this
		// worker; the batch goes again with all its links.
		x.log.Warn("Redis lost writes: forgetting the URLs this worker knew as seen, and sending its pages again", "err", err)
		x.known.clear()
		return true
	case err != nil:
		x.metrics.exErrors.Inc()
		x.log.Warn("exchange failed; will retry, held URLs stay leased", "err", err)
		if x.p.failed(time.Now()) {
			x.log.Error("giving up on finished pages: their leases will expire and the URLs be crawled again", "pages", len(x.pending))
			return false
		}
		return true
	}
	if res.Unasked != nil && !errors.Is(res.Unasked, frontier.ErrRolledBack) {
		x.log.Warn("asking a shard for URLs failed; the rest of the exchange went through", "err", res.Unasked)
	}
	if res.Forget {
		x.log.Warn("Redis lost writes in a shard: forgetting the URLs this worker knew as seen")
		x.known.clear()
	}
	x.p.succeeded(now, c, len(res.Popped), res.Info.NextDue)
	if x.budget {
		x.pages.Store(res.Info.Pages)
	}
	x.counters.Exchanges.Add(1)
	x.counters.Sent.Add(int64(len(batch)))
	if c.want > 0 && len(res.Popped) == 0 && len(batch) == 0 {
		x.counters.EmptyPops.Add(1) // a call for nothing
	}
	for i, e := range batch {
		if e.back != nil {
			x.held.Delete(e.back.ID)
			continue
		}
		x.held.Delete(e.page.Lease.ID)
		if !res.Held[i] {
			x.refused(e.rec)
		}
		x.recorded(sent[i], e.rec, res.Queued[i], res.Held[i])
	}
	x.pending = rest
	for _, l := range res.Popped {
		x.held.Store(l.ID, l)
		x.known.add(l.Item.URL)        // a URL handed out is seen: links to it need no Redis work
		x.ready <- leased{l, res.Info} // room was counted, and only this goroutine sends
	}
	if res.Info.CrawlOver && x.exitWhenDone && (len(res.Popped) == 0 || x.budget) {
		x.crawlDone() // finished (or the page budget spent: what was popped goes back)
	}
	return true
}

// oneShard splits the pending entries: up to n whose leases end in the
// shard of the oldest (an exchange ends leases of one shard, atomically),
// and the rest, in order. With one shard, the first n and the rest.
func (x *exchanger) oneShard(n int) (batch, rest []entry) {
	home := -1
	for _, e := range x.pending {
		l := e.back
		if l == nil {
			l = e.page.Lease
		}
		if home < 0 {
			home = x.fr.Home(l)
		}
		if len(batch) < n && x.fr.Home(l) == home {
			batch = append(batch, e)
		} else {
			rest = append(rest, e)
		}
	}
	return batch, rest
}

// exchange sends a batch. Links this worker already knows are seen are
// left out here, at the moment of sending (not when the page finished),
// so that a batch refused because Redis went back in time goes again with
// every link once the worker has forgotten what it knew. It returns, per
// entry of the batch, the links sent; res.Queued is indexed the same way.
func (x *exchanger) exchange(ctx context.Context, batch []entry, want int) (frontier.Exchanged, [][]frontier.Item, error) {
	var pages []frontier.Finished
	var back []*frontier.Lease
	sent := make([][]frontier.Item, len(batch))
	for i, e := range batch {
		if e.back != nil {
			back = append(back, e.back)
			continue
		}
		page := e.page
		page.Outcome.Children = nil
		for _, ch := range e.page.Outcome.Children {
			if !x.known.has(ch.URL) {
				page.Outcome.Children = append(page.Outcome.Children, ch)
			}
		}
		sent[i] = page.Outcome.Children
		pages = append(pages, page)
	}
	res, err := x.fr.Exchange(ctx, pages, back, want)
	if err != nil {
		return res, nil, err
	}
	queued, held := make([][]bool, len(batch)), make([]bool, len(batch))
	d := 0
	for i, e := range batch {
		if e.back == nil {
			queued[i], held[i] = res.Queued[d], res.Held[d]
			d++
		}
	}
	res.Queued, res.Held = queued, held
	return res, sent, nil
}

// refused: Redis no longer held the lease of a finished page (it lapsed
// while this worker was paused or cut off from Redis, and the URL went to
// another worker), so its outcome was not recorded. Its WARC records, if
// any, are marked as a duplicate of the other worker's.
func (x *exchanger) refused(rec Record) {
	x.counters.Refused.Add(1)
	x.metrics.refused.Inc()
	x.log.Warn("a finished page's lease had lapsed: Redis refused its outcome, another worker has the URL", "url", rec.URL)
	if x.warc == nil || rec.WARC == nil {
		return
	}
	if err := x.warc.MarkDuplicate(*rec.WARC, rec.URL, "its lease lapsed before its exchange: the crawl gave the URL to another worker"); err != nil {
		x.log.Error("marking a refused page's WARC record as a duplicate failed", "url", rec.URL, "file", rec.WARC.File, "err", err)
	}
}

// recorded: a page's exchange went through with the links sent, of which
// those flagged in queued were new to the crawl.
func (x *exchanger) recorded(sent []frontier.Item, rec Record, queued []bool, held bool) {
	for _, ch := range sent {
		x.known.add(ch.URL) // marked seen whether or not the lease was held
	}
	if x.out == nil || rec.URL == "" || !held {
		return
	}
	for _, q := range queued {
		if q {
			rec.NewLinks++
		}
	}
	x.out.write(rec)
}
