package crawl

import (
	"errors"
	"time"

	"github.com/redcrawl/crawler/crawl/pace"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/control"
)

// exState is the exchanger's state machine, in the shape of etcd's raft:
// step(event, now) changes the state and returns the actions to take, and
// does no I/O. The exchanger's loop (exchanger.go) turns what happens into
// events, and performs the actions: calls to Redis, URLs handed to the
// fetch loops, a cache forgotten. Every decision is here, tested step by
// step in exstate_test.go on a fake clock:
//
//   - batching: when to call and with what (its timing is policy's);
//   - one batch for every shard: an exchange ends leases of any shards
//     (the frontier makes one call a shard, in one pipeline);
//   - the stop: URLs leased but not started go back, everything finished
//     is sent, nothing more is popped, and the machine ends once the loops
//     are gone and nothing is left to send;
//   - forgetting after a rollback: Redis lost this process's writes, so
//     what they taught it (links known to be seen) is forgotten and the
//     batch is sent again, whole;
//   - the crawl's end: an exchange that says the crawl is over stops the
//     worker (with ExitWhenDone), and a crawl gone from Redis ends all.
type exState struct {
	p            *pace.Policy
	pending      []entry // handed in, not sent yet, oldest first
	exitWhenDone bool    // ExitWhenDone: the crawl's end stops the worker
	budget       bool    // the crawl has a page budget
	// version is the settings version the worker acts on; a reply or a
	// message that says a newer one is in force brings actReload.
	version  int64
	stopping bool
	// paused: the crawl is paused (crawler pause), by the last reply that
	// asked for URLs, or by the message hold.lua sends, which the next
	// reply confirms: the URLs waiting in the buffer go back unstarted,
	// as a stopping worker's do.
	paused bool
	gone   bool
	ended  bool
}

// exConfig is what an exchanger's state machine is told once, when made:
// nothing writes its state after.
type exConfig struct {
	loops        int     // fetch loops
	rate         float64 // a host's requests a second (0 or Inf: no limit)
	burst        int     // a host's burst
	exitWhenDone bool    // ExitWhenDone: the crawl's end stops the worker
	budget       bool    // the crawl has a page budget
	version      int64   // the settings version these come from
}

func newExState(cfg exConfig) *exState {
	p := pace.New(pace.Prefetch * cfg.loops) // its loops: cfg.loops, at least 1
	p.ForRate(cfg.rate, cfg.burst)
	return &exState{p: p, exitWhenDone: cfg.exitWhenDone, budget: cfg.budget, version: cfg.version}
}

// What happens to the exchanger.
type evKind int

const (
	evTick        evKind = iota // the loop heard everything that had happened: decide
	evHandedIn                  // a fetch loop handed in an entry
	evLoopsClosed               // no fetch loop will hand in anything again
	evBell                      // a fetch loop found nothing ready
	evWake                      // a message on a wake channel
	evStop                      // the worker stops
	evGone                      // the crawl is gone from Redis (another goroutine saw it)
	evReplied                   // the call the last actCall asked for returned
	evReloaded                  // the worker acts on newer settings (actReload): cfg says what of them
)

type event struct {
	kind      evKind
	ready     int               // evTick: leased URLs in the ready buffer
	unstarted []*frontier.Lease // evTick while stopping or paused: those URLs, taken back from the buffer
	idle      int               // evTick: fetch loops waiting for a URL
	busySince []time.Time       // evTick: when each busy loop took its URL
	slow      time.Duration     // evTick: the slowest and fastest of the recent URLs' time in a loop (pace.LoopTimes)
	fast      time.Duration
	most      time.Duration
	samples   int
	entry     entry  // evHandedIn
	channel   string // evWake: its channel and message,
	payload   string
	waiting   int // and how many fetch loops wait for a URL
	reply     reply
	cfg       exConfig // evReloaded: the new settings' rate, burst, budget and version
}

// reply is how the call of an actCall went.
type reply struct {
	batch []entry
	want  int
	took  time.Duration      // how long the call took
	res   frontier.Exchanged // Queued and Held indexed as batch
	sent  [][]frontier.Item  // per entry of batch, the links sent (those not known to be seen)
	err   error
}

// What the exchanger's loop does.
type actKind int

const (
	actCall      actKind = iota // exchange batch, popping up to want URLs; then step evReplied
	actSleep                    // wait for an event, or until
	actWoken                    // tell the frontier channel's shard has URLs again (frontier.Frontier.Woken)
	actSettle                   // the reply went through: record its pages, hand out its URLs
	actForget                   // forget the URLs known to be seen: Redis lost writes that taught them
	actResend                   // the reply of an earlier call was lost, and it had gone through: the batch goes again
	actRetry                    // the call failed (err); it is made again after a back-off
	actWarn                     // a shard asked only for URLs failed (err); the rest went through
	actCrawlDone                // the crawl is over: stop the worker
	actMarkGone                 // the crawl is gone from Redis: stop everything
	actGiveUp                   // Redis did not answer, the loops are gone: the pages waiting are left to their leases
	actDiscard                  // the crawl is gone: take what the loops hand in until they are all gone, and end
	actFail                     // a script cannot run (err): the worker stops with it
	actEnd                      // everything was sent: end
	actReload                   // newer settings are in force: read them (then evReloaded)
)

type action struct {
	kind    actKind
	batch   []entry   // actCall
	want    int       // actCall
	again   bool      // actCall: late URLs given back ask their hosts for new tokens (not while stopping or paused)
	until   time.Time // actSleep
	reply   reply     // actSettle
	err     error     // actRetry, actWarn, actForget (why), actFail
	channel string    // actWoken
}

// step takes one event, at now, and returns what to do.
func (s *exState) step(ev event, now time.Time) []action {
	if s.ended {
		return nil
	}
	switch ev.kind {
	case evHandedIn:
		s.add(now, ev.entry)
	case evLoopsClosed:
		s.p.LoopsClosed()
	case evBell:
		s.p.Bell()
	case evWake:
		if ev.payload == control.WakePaused {
			s.paused = true
		}
		if v, ok := control.SettingsMessage(ev.payload); ok && v > s.version {
			return []action{{kind: actReload}, {kind: actWoken, channel: ev.channel}}
		}
		s.p.Wake(ev.payload, ev.waiting)
		return []action{{kind: actWoken, channel: ev.channel}}
	case evStop:
		s.stopping = true
	case evGone:
		s.gone = true
	case evReplied:
		acts := s.replied(ev.reply, now)
		if ev.reply.err == nil && ev.reply.res.Info.Settings > s.version && !s.ended {
			acts = append(acts, action{kind: actReload}) // until it has read them, the shards pop nothing for it
		}
		return acts
	case evReloaded:
		if ev.cfg.version > s.version {
			s.version, s.budget = ev.cfg.version, ev.cfg.budget
			s.p.ForRate(ev.cfg.rate, ev.cfg.burst)
			s.p.AskNow() // under them
		}
	case evTick:
		return s.tick(ev, now)
	}
	return nil
}

// add takes an entry handed in.
func (s *exState) add(now time.Time, e entry) {
	s.p.MissedWindow(now, e.late)
	s.p.Added(now, len(s.pending) == 0)
	s.pending = append(s.pending, e)
}

// tick decides, once the loop heard everything that had happened.
func (s *exState) tick(ev event, now time.Time) []action {
	if s.gone {
		// Nothing to send, nobody to send it to.
		s.ended = true
		return []action{{kind: actDiscard}}
	}
	for _, l := range ev.unstarted { // URLs not started go back with the last call
		s.add(now, entry{back: l})
	}
	s.p.SetLoopTimes(ev.slow, ev.fast, ev.most, ev.samples)
	c, ok, until := s.p.Decide(now, pace.World{Ready: ev.ready, Pending: len(s.pending), Stopping: s.stopping, Idle: ev.idle, BusySince: ev.busySince})
	if ok {
		batch := s.pending[:min(c.Send, len(s.pending)):min(c.Send, len(s.pending))]
		return []action{{kind: actCall, batch: batch, want: c.Want, again: !s.stopping && !s.paused}}
	}
	if s.p.Done(len(s.pending)) {
		s.ended = true
		return []action{{kind: actEnd}}
	}
	return []action{{kind: actSleep, until: until}}
}

// replied takes the reply to a call.
func (s *exState) replied(r reply, now time.Time) []action {
	switch {
	case errors.Is(r.err, frontier.ErrGone):
		s.gone = true
		return []action{{kind: actMarkGone}}
	case errors.Is(r.err, frontier.ErrScript):
		// Not a lost reply, and not worth a retry: a script refused before
		// writing (a number set by hand, a command the user may not run) or
		// failed half-way. The worker stops, saying what; the URLs it holds
		// come back when their leases expire.
		s.ended = true
		return []action{{kind: actFail, err: r.err}, {kind: actDiscard}}
	case errors.Is(r.err, frontier.ErrReplyLost):
		// Nothing was lost: the batch goes again, and Redis records
		// nothing twice.
		return []action{{kind: actResend}}
	case errors.Is(r.err, frontier.ErrRolledBack):
		// Nothing was written. The batch goes again with all its links,
		// once what the lost writes taught is forgotten.
		return []action{{kind: actForget, err: r.err}}
	case r.err != nil:
		if s.p.Failed(now) {
			s.ended = true
			return []action{{kind: actGiveUp, err: r.err}}
		}
		return []action{{kind: actRetry, err: r.err}}
	}
	if r.want > 0 { // a call that wanted no URL did not read the pause
		s.paused = r.res.Info.Paused
	}
	got := len(r.res.Popped) + len(r.res.Again) // a late URL kept is one of those wanted
	s.p.Succeeded(now, pace.Call{Send: len(r.batch), Want: r.want}, got, r.res.Info.NextDue, r.took)
	s.pending = without(s.pending, r.batch)
	acts := []action{{kind: actSettle, reply: r}}
	if r.res.Unasked != nil && !errors.Is(r.res.Unasked, frontier.ErrRolledBack) {
		acts = append(acts, action{kind: actWarn, err: r.res.Unasked})
	}
	if r.res.Forget {
		acts = append(acts, action{kind: actForget, err: r.res.Unasked})
	}
	if r.res.Info.CrawlOver && s.exitWhenDone && (got == 0 || s.budget) {
		// Finished (or the page budget spent: what was popped goes back).
		acts = append(acts, action{kind: actCrawlDone})
	}
	return acts
}

// without is pending less the entries of batch, which were taken from it
// in order.
func without(pending, batch []entry) []entry {
	rest := pending[:0:0]
	i := 0
	for _, e := range pending {
		if i < len(batch) && e.lease() == batch[i].lease() {
			i++
			continue
		}
		rest = append(rest, e)
	}
	return rest
}
