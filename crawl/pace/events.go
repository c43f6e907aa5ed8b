package pace

// What the exchanger tells its policy (policy.go) as it goes: loops
// closed, URLs added, a wake from another worker, a call that succeeded
// or failed.

import (
	"time"
)

// Done: the loops are gone and nothing is left to send.
func (p *Policy) Done(pending int) bool { return p.closed && pending == 0 }

// Added: a finished page or a given-back URL arrived at now, when first
// says nothing else was waiting to be sent.
func (p *Policy) Added(now time.Time, first bool) {
	if first {
		p.oldest = now
	}
}

// LoopsClosed: no fetch loop will hand in anything again.
func (p *Policy) LoopsClosed() { p.closed = true }

// Bell: a fetch loop found nothing ready. If the queue got URLs while the
// worker was busy, ask now.
func (p *Policy) Bell() {
	p.hungry = true
	if p.refilled && p.failures == 0 {
		p.pollAt = time.Time{}
	}
}

// Wake: a message on the crawl's wake channel. "1": the empty queue has
// URLs again — ask now if a loop waits (the other workers' buffers still
// hold work: not every worker need rush at the same few URLs), else
// remember it for the next bell. "done": ask now, to learn it is over;
// "resumed": the crawl's pause ended, ask now. ("drained" is for the
// scheduler; "paused" for the state machine.)
func (p *Policy) Wake(payload string, waiting int) {
	switch {
	case p.failures == 0 && (payload == "done" || payload == "resumed" || payload == "1" && waiting > 0):
		p.pollAt = time.Time{}
	case payload == "1":
		p.refilled = true
	}
}

// Succeeded: call c, decided at now, went through and popped `popped` URLs;
// nextDue is how long until some host is due (-1: nothing queued); took
// is how long the call took.
func (p *Policy) Succeeded(now time.Time, c Call, popped int, nextDue, took time.Duration) {
	if p.call == 0 {
		p.call = took
	} else {
		p.call += (took - p.call) / 4
	}
	p.failures, p.hungry = 0, false // the bell has been answered
	p.oldest = now                  // of what was not sent: it waits from now
	if c.Want == 0 {
		return
	}
	p.refilled = false
	// A pop that found no URL at all: other workers may be starved too.
	// (One that found fewer than it wanted only shows that the buffers
	// hold the queue; treating that as starvation doubles the calls.)
	// In a rate-limited crawl, a pop that found nothing due while URLs are
	// queued waits for tokens, not for links.
	p.linger = lingerBusy
	if popped == 0 && (p.gap == 0 || nextDue < 0) {
		p.linger = lingerStarved
	}
	p.short = popped < c.Want
	switch {
	case popped == c.Want:
		p.idle, p.pollAt = idleMin, time.Time{}
	case popped > 0 && p.gap > 0 && nextDue >= 0:
		p.pollAt = now.Add(min(max(nextDue, p.gap), idleMax)) // what is due before then was popped
	case popped > 0:
		p.pollAt = time.Time{} // the queue gave what it had; the next nearly empty buffer asks again
	case nextDue >= 0:
		p.pollAt = now.Add(min(max(nextDue, 5*time.Millisecond), idleMax)) // some host is due then
	default:
		p.idle = min(2*p.idle, idleMax)
		p.pollAt = now.Add(p.idle)
	}
}

// Failed: a call failed at now. It reports whether to give up: the loops
// are gone and Redis has not answered several times in a row.
func (p *Policy) Failed(now time.Time) (giveUp bool) {
	p.failures++
	if p.closed && p.failures >= giveUpAfter {
		return true
	}
	p.pollAt = now.Add(min(time.Duration(p.failures)*retryMin, retryMax))
	return false
}
