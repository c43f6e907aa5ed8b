package crawl

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl/pace"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redis/go-redis/v9"
)

// The exchanger is the one goroutine of a worker process that talks to the
// frontier for its fetch loops. It keeps a few leased URLs ready for them
// and sends the pages they finish, many to a call, in one atomic
// frontier.Exchange that also pops the next URLs. Every decision — when to
// call, with what, and what a reply means — is its state machine's
// (exstate.go, whose timing is crawl/pace's Policy); this file is the loop around it:
// it turns what happens into events, and performs the actions.
//
// Nothing is lost by batching: a leased URL in the ready buffer, or a page
// waiting to be sent, is still in Redis's lease set under a lease this
// process's heartbeat renews; if the process dies, the lease runs out and
// the scheduler queues the URL again. A graceful stop sends every finished
// page and gives the unstarted URLs back to the front of their queues.
type exchanger struct {
	id       string // the worker's
	c        redis.UniversalClient
	fr       *frontier.Frontier
	known    *known
	held     *sync.Map // lease id -> *frontier.Lease: what the heartbeat renews
	out      *recordWriter
	counters *Counters
	log      *slog.Logger
	warc     *archive.Writer // nil: no archive; refused pages' records are marked there
	pages    *atomic.Int64   // the crawl's pages fetched, as the last exchange said
	metrics  *metrics
	end      *ending            // how the run ends: told when the crawl is over, or gone
	pauses   *pauses            // hosts paused, as announced on the crawl's pause channel
	robots   *politeness.Robots // nil: none warmed (tests)
	addrs    *addresses         // nil: no lookups (tests); with --politeness ip, the hosts a pop asks for (addresses.go)
	// reload reads the crawl's settings when a newer version is in force
	// (Worker.reload); nil: never (tests of the exchanger alone).
	reload func(context.Context) (*live, error)

	s       *exState
	ready   *readyQueue   // leased URLs waiting for a fetch loop, earliest window first
	entries chan entry    // what the loops are done with; closed when they are gone
	bell    chan struct{} // a loop found nothing queued (one slot)
	waiting atomic.Int32  // loops waiting for a URL now
	// times: how long the recent URLs kept a loop; since: when each loop
	// took the URL it has (unix ns; 0: it has none).
	times  pace.LoopTimes
	since  []atomic.Int64
	wakeCh <-chan *redis.Message
	now    func() time.Time // the clock every decision reads (Options.Clock)
	timer  *time.Timer      // a sleep's (run's)
	stopCh <-chan struct{}  // the worker's stop, until it is heard (nil after)
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
	late time.Duration // back: how long after its token's window closed it was given back (0: not for that)
}

// lease is the lease the entry ends.
func (e entry) lease() *frontier.Lease {
	if e.back != nil {
		return e.back
	}
	return e.page.Lease
}

// newExchanger is the exchanger of cfg.loops fetch loops, deciding on
// now: the clock the frontier places its leases' windows on
// (Options.Clock).
func newExchanger(cfg exConfig, now func() time.Time) *exchanger {
	return &exchanger{s: newExState(cfg), ready: newReadyQueue(now), now: now,
		entries: make(chan entry, 2*cfg.loops+2), // a loop never waits long to hand in
		bell:    make(chan struct{}, 1), since: make([]atomic.Int64, cfg.loops)}
}

// take gives fetch loop i its next URL once its token's window opens;
// false once the worker stops.
func (x *exchanger) take(stop context.Context, i int) (leased, bool) {
	x.waiting.Add(1)
	l, ok := x.ready.take(stop, x.ring)
	x.waiting.Add(-1)
	if !ok {
		return leased{}, false
	}
	x.since[i].Store(x.now().UnixNano())
	return x.started(stop, l)
}

// ring tells the exchanger that a loop found nothing queued.
func (x *exchanger) ring() {
	select {
	case x.bell <- struct{}{}:
	default:
	}
}

// worked: loop i spent d on a URL, and is done with it; tried: it took
// it to its end (a URL given back at once for its window says nothing of
// how long URLs keep a loop).
func (x *exchanger) worked(i int, d time.Duration, tried bool) {
	x.since[i].Store(0)
	if tried {
		x.times.Add(d)
	}
}

// busySince is when each busy loop took its URL.
func (x *exchanger) busySince() []time.Time {
	var out []time.Time
	for i := range x.since {
		if ns := x.since[i].Load(); ns != 0 {
			out = append(out, time.Unix(0, ns))
		}
	}
	return out
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

// putBack hands in a lease ended with no page, its URL put back as pb
// says (a retry deferred, a busy host's URL requeued): the next call ends
// it, as it ends a finished page's.
func (x *exchanger) putBack(l *frontier.Lease, pb *frontier.PutBack) {
	x.entries <- entry{page: frontier.Finished{Lease: l, Outcome: frontier.Outcome{PutBack: pb}}}
}

// missed hands in a lease whose token's window closed late ago, unused:
// the next call asks its host for a new token (frontier.Lease.Late), and
// with one the URL comes back to the ready buffer; without, it goes back
// as giveBack's do. Either way the next pops keep more of their windows
// (policy.margin).
func (x *exchanger) missed(l *frontier.Lease, late time.Duration) {
	x.entries <- entry{back: l, late: late}
}

// close tells the exchanger that no loop will hand in anything again.
func (x *exchanger) close() { close(x.entries) }

// run is the exchanger's loop. It ends after close, once everything handed
// in was sent (or, with Redis unreachable, given up on: the leases expire
// and the scheduler queues those URLs again), or when the crawl is gone.
func (x *exchanger) run(stop, work context.Context) {
	x.timer = time.NewTimer(time.Hour)
	defer x.timer.Stop()
	sub := x.c.Subscribe(work, append(x.fr.Wakes(), x.fr.PauseChannel())...)
	defer sub.Close()
	x.wakeCh = sub.Channel()
	x.stopCh = stop.Done()
	for !x.s.ended {
		select {
		case <-x.stopCh:
			x.stopCh = nil
			x.step(work, event{kind: evStop})
		default:
		}
		if x.end.gone() {
			x.step(work, event{kind: evGone})
		}
		x.drain(work)
		tick := event{kind: evTick, ready: x.ready.len(), idle: int(x.waiting.Load()), busySince: x.busySince()}
		tick.slow, tick.fast, tick.most, tick.samples = x.times.Read(2 * len(x.since))
		if x.s.stopping || x.s.paused {
			for _, l := range x.ready.drain() {
				tick.unstarted = append(tick.unstarted, l.lease)
			}
			tick.ready = 0
		}
		x.step(work, tick)
	}
}

// step has the state machine take ev now and performs the actions it
// returns, in order. An action that brings an event (a call's reply,
// what a sleep waited for) has it taken after them, by this loop: the
// state machine is never stepped from inside an action.
func (x *exchanger) step(work context.Context, ev event) {
	for pending := []event{ev}; len(pending) > 0; {
		ev, pending = pending[0], pending[1:]
		for _, a := range x.s.step(ev, x.now()) {
			if next, ok := x.perform(work, a); ok {
				pending = append(pending, next)
			}
		}
	}
}

// perform does what the state machine said.
func (x *exchanger) perform(work context.Context, a action) (event, bool) {
	switch a.kind {
	case actCall:
		return x.call(work, a.batch, a.want, a.again), true
	case actWoken:
		x.fr.Woken(a.channel)
	case actSettle:
		x.settle(work, a.reply)
	case actForget:
		x.log.Warn("Redis lost writes: forgetting the URLs this worker knew as seen, and sending its pages again", "err", a.err)
		x.known.clear()
		LogEvent(work, eventsOf(x.fr), x.log, events.Event{Kind: events.Resend, Worker: x.id,
			Text: fmt.Sprintf("Redis lost writes (a restart or a failover): %s forgot what they taught it and resent its exchange", x.id)})
	case actResend:
		x.log.Info("an exchange whose reply was lost had gone through; sending its batch again")
		LogEvent(work, eventsOf(x.fr), x.log, events.Event{Kind: events.Resend, Worker: x.id,
			Text: fmt.Sprintf("a reply from Redis was lost: %s resent its exchange (Redis records nothing twice)", x.id)})
	case actRetry:
		x.metrics.exErrors.Inc()
		x.log.Warn("exchange failed; will retry, held URLs stay leased", "err", a.err)
	case actWarn:
		x.log.Warn("asking a shard for URLs failed; the rest of the exchange went through", "err", a.err)
	case actCrawlDone:
		x.end.crawlOver()
	case actMarkGone:
		x.end.markGone()
	case actFail:
		x.metrics.exErrors.Inc()
		x.end.fail(fmt.Errorf("%w; stopped (the URLs this worker holds come back when their leases expire)", a.err))
	case actGiveUp:
		x.metrics.exErrors.Inc()
		x.log.Error("giving up on finished pages: their leases will expire and the URLs be crawled again",
			"pages", len(x.s.pending), "err", a.err)
	case actDiscard:
		if x.entries != nil {
			for range x.entries {
			}
		}
	case actEnd:
		x.flush(work)
	case actSleep:
		return x.sleep(a.until)
	case actReload:
		return x.reloaded(work)
	}
	return event{}, false
}

// reloaded reads the newer settings in force (actReload), and tells the
// state machine what of them it keeps to; a read that failed is tried
// again at the next reply, which still says a newer version is in force.
func (x *exchanger) reloaded(work context.Context) (event, bool) {
	if x.reload == nil {
		return event{}, false
	}
	ctx, cancel := context.WithTimeout(work, 10*time.Second)
	defer cancel()
	l, err := x.reload(ctx)
	if err != nil {
		x.log.Warn("reading the crawl's new settings failed; will retry", "err", err)
		return event{}, false
	}
	s := l.s
	return event{kind: evReloaded, cfg: exConfig{rate: s.Rate, burst: s.Burst, budget: s.MaxPages > 0, version: s.Version}}, true
}

// flush acks the last exchange's outbox entries (over shards), so that
// its pages' records are written now rather than by the scheduler's sweep
// once they are OutboxAge old.
func (x *exchanger) flush(work context.Context) {
	ctx, cancel := context.WithTimeout(work, 10*time.Second)
	defer cancel()
	if err := x.fr.Flush(ctx); err != nil {
		x.log.Warn("acking the last exchange's outbox entries failed: the scheduler's sweep will", "err", err)
	}
}

// call makes the exchange, and returns its reply as an event.
func (x *exchanger) call(work context.Context, batch []entry, want int, again bool) event {
	// Never cancelled by the stop: an exchange cut off halfway could leave
	// popped URLs leased to nobody until their lease expires.
	ctx, cancel := context.WithTimeout(work, 30*time.Second)
	start := x.now()
	res, sent, err := x.exchange(ctx, batch, want, again)
	took := x.now().Sub(start)
	x.metrics.exchange.Observe(took.Seconds())
	cancel()
	return event{kind: evReplied, reply: reply{batch: batch, want: want, took: took, res: res, sent: sent, err: err}}
}

// exchange sends a batch. Links this worker already knows are seen are
// left out here, at the moment of sending (not when the page finished),
// so that a batch refused because Redis went back in time goes again with
// every link once the worker has forgotten what it knew. It returns, per
// entry of the batch, the links sent; res.Queued is indexed the same way.
// With again, a URL given back because its token's window closed asks its
// host for a new token in the same call (frontier.Lease.Late).
func (x *exchanger) exchange(ctx context.Context, batch []entry, want int, again bool) (frontier.Exchanged, [][]frontier.Item, error) {
	var pages []frontier.Finished
	var back []*frontier.Lease
	sent := make([][]frontier.Item, len(batch))
	for i, e := range batch {
		if e.back != nil {
			e.back.Late = again && e.late > 0
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
	if len(res.Info.Resolve) > 0 && x.addrs != nil {
		if err := x.addrs.store(ctx, res.Info.Resolve); err != nil {
			x.log.Warn("storing the addresses of hosts failed; the next pop asks again", "hosts", len(res.Info.Resolve), "err", err)
		}
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
