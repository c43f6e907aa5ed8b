package crawl

import (
	"context"
	"time"

	"github.com/redcrawl/crawler/crawl/pace"
	"github.com/redis/go-redis/v9"
)

// What happens to the exchanger, heard as events: pages and leases the
// loops hand in, a loop's bell, a wake or pause message, the stop, and
// the end of a sleep the state machine asked for. The loop (run, step)
// takes them one at a time; nothing here decides.

// drain hears, without waiting, what arrived during the last call. With
// Redis slow (a call of a second or more), the next decision is due the
// moment a call returns; without this it would see no finished page, ask
// for another pop, and never read what the loops handed in.
func (x *exchanger) drain(work context.Context) {
	for i := 0; i < 4*pace.MaxPrefetch*x.s.p.Loops()+16; i++ {
		ev, ok := x.next(nil, nil, false)
		if !ok {
			return
		}
		x.step(work, ev)
	}
}

// next is the next thing that happened, as an event; with block false,
// only one that already happened (ok false: none). The timer's end is no
// event: the tick that follows decides.
func (x *exchanger) next(stopCh <-chan struct{}, timer <-chan time.Time, block bool) (event, bool) {
	if !block {
		select { // a select with a default takes it only when nothing else is ready
		case e, ok := <-x.entries:
			return x.handedIn(e, ok), true
		case <-x.bell:
			return event{kind: evBell}, true
		case m := <-x.wakeCh:
			return x.woken(m)
		default:
			return event{}, false
		}
	}
	select {
	case e, ok := <-x.entries:
		return x.handedIn(e, ok), true
	case <-x.bell:
		return event{kind: evBell}, true
	case m := <-x.wakeCh:
		return x.woken(m)
	case <-stopCh:
		return event{kind: evStop}, true
	case <-timer:
		return event{}, false
	}
}

// handedIn is what a receive from the loops' channel means.
func (x *exchanger) handedIn(e entry, ok bool) event {
	if !ok {
		x.entries = nil // a closed channel is heard once
		return event{kind: evLoopsClosed}
	}
	return event{kind: evHandedIn, entry: e}
}

// woken is what a message on the wake channels (or the pause channel)
// means.
func (x *exchanger) woken(m *redis.Message) (event, bool) {
	if m == nil { // the subscription was closed (its client was): polling alone from now on
		x.wakeCh = nil
		return event{}, false
	}
	if m.Channel == x.fr.PauseChannel() {
		x.pauses.heard(m.Payload) // for the fetch loops; nothing for the state machine
		return event{}, false
	}
	return event{kind: evWake, channel: m.Channel, payload: m.Payload, waiting: int(x.waiting.Load())}, true
}

// sleep waits for the next event until until (the stop, while it has not
// come, is one; the timer's end is none: the next tick decides).
func (x *exchanger) sleep(until time.Time) (event, bool) {
	x.timer.Reset(max(until.Sub(x.now()), time.Millisecond))
	defer x.timer.Stop()
	ev, ok := x.next(x.stopCh, x.timer.C, true)
	if ok && ev.kind == evStop {
		x.stopCh = nil // heard once
	}
	return ev, ok
}
