package crawl

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redcrawl/crawler/frontier"
)

// The broker is the one goroutine of a worker process that talks to the
// frontier on behalf of its fetch loops. It keeps a few leased URLs ready
// for them and sends the pages they finish, many to a call, in one
// exchange (frontier.Exchange) that also pops the next URLs.
//
// Why: Redis spends ~25 µs of event-loop and socket time on any lone
// call before doing its work — more than a page's work — so a pop and a
// finish per page made every page cost Redis ~160 µs. Batched, a call
// carries several pages and the fixed cost is shared out among them.
//
// Nothing is lost by batching: a leased URL in the ready buffer or a page
// waiting to be sent is still in Redis's lease set under a lease this
// process's heartbeat renews; if the process dies, the lease runs out and
// the scheduler queues the URL again. A graceful stop sends every finished
// page and gives the unstarted URLs back to the front of their queues.
type broker struct {
	w       *Worker
	stopAll context.CancelFunc
	ready   chan popped   // leased URLs waiting for a fetch loop
	results chan finished // pages the loops are done with; closed when they are gone
	hungry  chan struct{} // a loop found nothing ready (1 slot: a doorbell)
	waiting atomic.Int32  // loops waiting for a URL now
}

type popped struct {
	lease *frontier.Lease
	info  frontier.PopInfo
}

// finished is a page done with (or, with back set, a lease given back unused).
type finished struct {
	done frontier.Done
	rec  Record
	back *frontier.Lease
}

const (
	// A finished page waits at most this long for company before it is
	// sent: its new links reach other workers this much later at worst,
	// and a worker killed with kill -9 loses at most this much work (the
	// leases expire and the pages are fetched again). Measured: 200 ms made
	// a call per ~22 pages, 500 ms one per ~40 and 10-15 % less Redis CPU
	// a page, at the same pages/s.
	brokerLinger = 500 * time.Millisecond
	// ... or only this long after a pop found no URL (other workers may
	// be waiting for exactly those links).
	brokerLingerLow = 10 * time.Millisecond
	// brokerMaxBatch pages make a call at once.
	brokerMaxBatch = 64
	// An idle broker polls at most once a second; when some host is due
	// sooner (rate-limited crawls), it asks then.
	idleMin, idleMax = 50 * time.Millisecond, time.Second
)

func newBroker(w *Worker, stopAll context.CancelFunc) *broker {
	n := w.o.Concurrency
	return &broker{w: w, stopAll: stopAll,
		ready:   make(chan popped, 6*n),     // prefetch: six URLs a loop
		results: make(chan finished, 2*n+2), // never blocks a loop for long
		hungry:  make(chan struct{}, 1)}
}

// take gives a fetch loop its next URL; false once the worker stops.
func (b *broker) take(stop context.Context) (popped, bool) {
	select {
	case p := <-b.ready:
		return b.check(stop, p)
	default:
	}
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	select {
	case b.hungry <- struct{}{}:
	default:
	}
	select {
	case p := <-b.ready:
		return b.check(stop, p)
	case <-stop.Done():
		return popped{}, false
	}
}

// check gives a URL taken after the stop back, rather than start it.
func (b *broker) check(stop context.Context, p popped) (popped, bool) {
	if stop.Err() != nil {
		b.results <- finished{back: p.lease}
		return popped{}, false
	}
	return p, true
}

// finish queues a page's outcome for the next exchange.
func (b *broker) finish(d frontier.Done, rec Record) {
	b.results <- finished{done: d, rec: rec}
}

// close tells the broker that no loop will send again.
func (b *broker) close() { close(b.results) }

// run is the broker's loop: it ends after close, once everything finished
// was sent (or, with Redis unreachable, given up on: the leases expire and
// the scheduler requeues those URLs).
func (b *broker) run(stop, work context.Context) {
	w := b.w
	var (
		pending  []finished // pages and give-backs not yet sent
		oldest   time.Time  // when the oldest pending page arrived
		pollAt   time.Time  // no pop before this (idle, or backing off after an error)
		idle     = idleMin
		hungry   bool // a loop rang since the last exchange: it waits for a URL
		closed   bool // the loops are gone
		failures int  // exchanges failed in a row
		linger   = brokerLingerLow
	)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// An idle broker sleeps up to idleMax between polls; a message on the
	// wake channel (the empty queue has URLs again) ends the sleep early.
	sub := w.c.Subscribe(work, w.fr.Keys().Wake())
	defer sub.Close()
	wakeCh := sub.Channel()
	refilled := false // a wake message came while no loop waited
	for {
		if w.vanished.Load() {
			// The crawl is gone: nothing to send, nobody to send it to.
			// Take what the loops hand in until they have all stopped.
			if b.results != nil {
				for range b.results {
				}
			}
			return
		}
		stopping := stop.Err() != nil
		if stopping { // URLs not started go back with the final exchange
			for len(b.ready) > 0 {
				p := <-b.ready
				pending = append(pending, finished{back: p.lease})
			}
		}
		now := time.Now()
		room := cap(b.ready) - len(b.ready)
		backingOff := failures > 0 && now.Before(pollAt)
		// Send when a batch is full, a page has waited long enough, a loop
		// waits (the new links may be the work it waits for), or at the stop;
		// pop when the ready buffer is almost empty (a refill takes a
		// millisecond or two, a loop's page tens: the buffer need only
		// cover the call) and some host may be due. Big refills, few calls.
		sendNow := len(pending) > 0 && (len(pending) >= brokerMaxBatch || stopping || hungry || closed ||
			!now.Before(oldest.Add(linger)))
		popNow := !stopping && room > 0 && !now.Before(pollAt) && (hungry || len(b.ready) <= cap(b.ready)/8)
		if (sendNow || popNow) && !backingOff {
			want := 0
			if !stopping && room > 0 && (popNow || failures == 0) {
				want = room // a send pops along: it costs Redis little more
			}
			batch := pending[:min(len(pending), brokerMaxBatch)]
			// Never cancelled by the stop: an exchange cut off halfway could
			// leave popped URLs leased to nobody until their lease expires.
			ctx, cancel := context.WithTimeout(work, 30*time.Second)
			x, err := b.exchange(ctx, batch, want)
			cancel()
			if errors.Is(err, frontier.ErrGone) {
				w.gone()
				continue
			}
			if errors.Is(err, frontier.ErrRolledBack) {
				// Nothing was written. Forget what the lost writes taught
				// this worker; the batch goes again with all its links.
				w.o.Logf("%v: forgetting the URLs this worker knew as seen, and sending its pages again", err)
				w.known.clear()
				continue
			}
			if err != nil {
				failures++
				w.o.Logf("frontier: %v (will retry; held URLs stay leased)", err)
				if closed && failures >= 3 {
					w.o.Logf("giving up on %d finished pages: their leases will expire and the URLs be crawled again", len(pending))
					return
				}
				pollAt = time.Now().Add(min(time.Duration(failures)*200*time.Millisecond, 5*time.Second))
				continue
			}
			// The bell has been answered. A loop still waiting does not ring
			// again; b.waiting tells the wake handler it is there.
			failures, hungry = 0, false
			if want > 0 {
				refilled = false
				// A pop that found no URL at all: other workers may be idle
				// too, waiting for the links of the pages this one finishes.
				// (One that found fewer than it wanted only shows that the
				// buffers hold the queue: measured, treating that as
				// starvation doubled the calls.)
				linger = brokerLinger
				if len(x.Popped) == 0 {
					linger = brokerLingerLow
				}
			}
			w.Counters.Exchanges.Add(1)
			w.Counters.Sent.Add(int64(len(batch)))
			if want > 0 && len(x.Popped) == 0 && len(batch) == 0 {
				w.Counters.EmptyPops.Add(1) // a call for nothing
			}
			for i, f := range batch {
				if f.back != nil {
					w.held.Delete(f.back.ID)
					continue
				}
				w.held.Delete(f.done.Lease.ID)
				w.finished(x.sent[i], f.rec, x.queued[i])
			}
			pending = append(pending[:0], pending[len(batch):]...)
			oldest = now
			for _, l := range x.Popped {
				w.held.Store(l.ID, l)
				// A URL handed out is seen: links to it need no Redis work.
				w.known.add(l.Item.URL)
				b.ready <- popped{l, x.Info} // room was counted, and only this goroutine sends
			}
			if x.Info.Done && w.o.ExitWhenDone && (len(x.Popped) == 0 || w.s.MaxPages > 0) {
				// Finished (or the page budget spent: what was popped goes back).
				b.stopAll()
			}
			switch {
			case want == 0:
			case len(x.Popped) == want:
				idle, pollAt = idleMin, time.Time{}
			case len(x.Popped) > 0:
				pollAt = time.Time{} // the queue gave what it had; the next nearly empty buffer asks again
			case x.Info.NextDue >= 0:
				// Some host is due then: ask again at that moment.
				pollAt = now.Add(min(max(x.Info.NextDue, 5*time.Millisecond), idleMax))
			default:
				idle = min(idle*2, idleMax) // an idle worker asks about once a second, no more
				pollAt = now.Add(idle)
			}
			continue
		}
		if closed && len(pending) == 0 {
			return
		}
		// Sleep until a page arrives, a loop gets hungry, or a deadline passes.
		wake := time.Hour
		if len(pending) > 0 {
			wake = oldest.Add(linger).Sub(now)
		}
		if (room > 0 || failures > 0) && now.Before(pollAt) {
			wake = min(wake, pollAt.Sub(now))
		}
		timer.Reset(max(wake, time.Millisecond))
		stopCh := stop.Done()
		if stopping {
			stopCh = nil
		}
		select {
		case f, ok := <-b.results:
			if !ok {
				closed, b.results = true, nil
				break
			}
			if len(pending) == 0 {
				oldest = time.Now()
			}
			pending = append(pending, f)
		case <-b.hungry:
			hungry = true
			if refilled && failures == 0 {
				pollAt = time.Time{} // the queue got URLs while this worker was busy
			}
		case m := <-wakeCh:
			// The queue has URLs again, or the crawl is over: ask now if a
			// loop waits (the others' buffers still hold work: not all
			// workers need to rush at the same few URLs), or to learn it
			// is over. ("drained" is for the scheduler.)
			if failures == 0 && (m.Payload == "done" || m.Payload == "1" && b.waiting.Load() > 0) {
				pollAt = time.Time{}
			} else if m.Payload == "1" {
				refilled = true
			}
		case <-stopCh:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// exchanged is what the broker needs from an exchange.
type exchanged struct {
	frontier.Exchanged
	sent   [][]frontier.Item // per entry of the batch: the links sent (nil for give-backs)
	queued [][]bool          // per entry: which of those were queued
}

// exchange sends a batch. Links this worker already knows are seen are
// left out here, at the moment of sending (not when the page finished),
// so that a batch refused because Redis went back in time goes again with
// every link once the worker has forgotten what it knew.
func (b *broker) exchange(ctx context.Context, batch []finished, want int) (exchanged, error) {
	var done []frontier.Done
	var back []*frontier.Lease
	sent := make([][]frontier.Item, len(batch))
	for i, f := range batch {
		if f.back != nil {
			back = append(back, f.back)
			continue
		}
		d := f.done
		d.Outcome.Children = nil
		for _, ch := range f.done.Outcome.Children {
			if !b.w.known.has(ch.URL) {
				d.Outcome.Children = append(d.Outcome.Children, ch)
			}
		}
		sent[i] = d.Outcome.Children
		done = append(done, d)
	}
	x, err := b.w.fr.Exchange(ctx, done, back, want)
	if err != nil {
		return exchanged{}, err
	}
	out := exchanged{Exchanged: x, sent: sent, queued: make([][]bool, len(batch))}
	d := 0
	for i, f := range batch {
		if f.back == nil {
			out.queued[i] = x.Queued[d]
			d++
		}
	}
	return out, nil
}
