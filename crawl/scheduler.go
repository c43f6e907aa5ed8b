package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/frontier/payloads"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// scheduler is the role one worker of the crawl plays at a time, elected
// through leader/: it sweeps the frontier (due deferred URLs back to their
// queues, expired leases back or to the failed list, the done flag when
// nothing is left), each sweep a fenced script under its epoch.
type scheduler struct {
	id          string // the worker's
	c           redis.UniversalClient
	fr          *frontier.Frontier
	elector     *leader.Elector
	cfg         leader.Config
	every       time.Duration // sweep at least this often
	maxAttempts int
	settings    func() settings.Settings             // the settings the worker acts on (its page budget)
	reload      func(context.Context) (*live, error) // reads newer settings (Worker.reload)
	log         *slog.Logger
	markGone    func()
	fail        func(error) // the worker stops with this error
	metrics     *metrics
	out         *recordWriter // the worker's --out (nil: none), shared with its exchanger
	lagSaid     time.Time     // when a lagging export group was last said (groups.go)
	trimmed     time.Time     // when the results were last trimmed by the groups (groups.go)
}

// LogLeading is the message a worker logs, at info level with the
// attribute "epoch", when it becomes the crawl's scheduler.
const LogLeading = "leading as scheduler"

// LogFenced is the message a worker logs, at warn level with the attribute
// "epoch", when Redis refuses its sweep because a newer epoch leads.
const LogFenced = "scheduler fenced off: a newer epoch leads"

// LogEpochEnded is the message a scheduler logs when its leadership ends
// with no sweep left to send (the fence had nothing to refuse).
const LogEpochEnded = "scheduler epoch ended"

// run campaigns for the role and, while leading, sweeps. It resigns under
// work, not stop: a stopping worker still hands the role over at once.
func (sc *scheduler) run(stop, work context.Context) {
	for stop.Err() == nil {
		l, err := sc.elector.Campaign(stop)
		if err != nil {
			if stop.Err() == nil {
				sc.log.Warn("campaign for scheduler failed", "err", err)
				sleep(stop, sc.cfg.RetryInterval)
			}
			continue
		}
		sc.log.Info(LogLeading, "epoch", l.Epoch())
		recent, _ := sc.fr.Events.Read(stop, 50)
		LogEvent(stop, eventsOf(sc.fr), sc.log, events.Event{Kind: events.Lead, Worker: sc.id, Epoch: l.Epoch(), Text: leadText(recent, sc.id, l.Epoch())})
		sc.metrics.leader.Set(1)
		sc.metrics.epoch.Set(float64(l.Epoch()))
		sc.lead(stop, l)
		sc.metrics.leader.Set(0)
		// The resignation may take as long as the lock would hold anyway:
		// given up sooner (it was the retry interval, 50 ms in a test, and
		// a loaded Redis took longer), the lock stays a whole TTL with
		// nobody leading.
		rctx, cancel := context.WithTimeout(work, sc.cfg.TTL)
		if stop.Err() != nil && l.Err() == nil {
			LogEvent(work, eventsOf(sc.fr), sc.log, events.Event{Kind: events.Resign, Worker: sc.id, Epoch: l.Epoch(),
				Text: fmt.Sprintf("epoch %d: %s handed the lock over (it is stopping)", l.Epoch(), sc.id)})
		}
		if err := l.Resign(rctx); err != nil {
			sc.log.Warn("resign failed; the lock expires by itself", "within", sc.cfg.TTL, "err", err)
		}
		cancel()
	}
}

// lead sweeps every `every`, when the next deferred URL is due, and when
// an exchange reports nothing queued or held ("drained": the crawl may be
// over), until the leadership or the worker ends.
func (sc *scheduler) lead(stop context.Context, l *leader.Leadership) {
	sub := sc.c.Subscribe(l.Context(), sc.fr.Wakes()...)
	defer sub.Close()
	msgs := sub.Channel()
	timer := time.NewTimer(sc.every)
	defer timer.Stop()
	over := false // the last sweep found the crawl over
	for {
		// The sweep is sent under the worker's context, not the
		// leadership's: a leader that was paused past its lock's TTL (GC,
		// SIGSTOP, a frozen container) wakes and sweeps before it notices
		// its own deadline, and it is the fence in the script, not the
		// local clock, that keeps that late write out.
		sctx, cancel := context.WithTimeout(stop, sc.cfg.TTL)
		sw, err := sc.fr.Schedule(sctx, leader.EpochKey(l.Key()), l.Epoch(), sc.maxAttempts, 1000, sc.settings().MaxPages)
		cancel()
		if sc.out != nil {
			// The URLs it ended: in this worker's --out as in the results
			// stream, also those of a sweep whose end was refused (fenced:
			// its first script's records stand).
			for _, rec := range sw.Records {
				sc.out.writeJSON("", []byte(rec), nil)
			}
		}
		switch {
		case errors.Is(err, fence.ErrFenced):
			sc.metrics.fenced.Inc()
			sc.log.Warn(LogFenced, "epoch", l.Epoch(), "err", err)
			LogEvent(stop, eventsOf(sc.fr), sc.log, events.Event{Kind: events.Fenced, Worker: sc.id, Epoch: l.Epoch(),
				Text: fmt.Sprintf("a sweep by %s under epoch %d was refused by the fence: a newer epoch leads", sc.id, l.Epoch())})
			return
		case errors.Is(err, frontier.ErrGone):
			sc.markGone()
			return
		case errors.Is(err, frontier.ErrScript):
			// Trying again would fail again: the worker stops, saying what
			// (another worker elected takes the sweep, and stops too until
			// the key is repaired).
			sc.fail(fmt.Errorf("%w; stopped", err))
			return
		case err != nil && stop.Err() == nil:
			sc.log.Warn("sweep failed", "err", err)
		case sw.Reclaimed+sw.Failed > 0:
			sc.log.Info("sweep: expired leases back on the queue", "reclaimed", sw.Reclaimed, "failed_for_good", sw.Failed)
		}
		if err == nil {
			sc.trimResults(stop)
			if sw.CrawlOver && !over {
				sc.commitDigests(stop)
			}
			over = sw.CrawlOver
		}
		next := sc.every
		if err == nil && sw.Settings > sc.settings().Version {
			// The settings changed ('crawler set'): read them, and sweep
			// under them (until then no sweep ends the crawl).
			if _, err := sc.reload(stop); err != nil {
				sc.log.Warn("reading the crawl's new settings failed; will retry", "err", err)
			} else if sc.settings().Version >= sw.Settings {
				next = time.Nanosecond // the sweep the last one could not decide
			}
		}
		if err == nil && sw.NextDeferred >= 0 {
			// Retries come due one by one; a quarter second's grace lets
			// one sweep release several.
			next = min(next, max(sw.NextDeferred, 250*time.Millisecond))
		}
		if err == nil && sw.Again {
			next = time.Nanosecond // the sweep that confirms the crawl's end
		}
		timer.Reset(next)
		busy := map[string]bool{} // with shards: those a drained message must come from first
		for _, ch := range sw.Busy {
			busy[ch] = err == nil
		}
		if !sc.await(stop, l, timer, msgs, busy) {
			return
		}
	}
}

// await waits for the next sweep's moment; false when leading is over. A
// drained message brings the sweep once every shard in busy (those the
// last sweep found not empty) has sent one.
func (sc *scheduler) await(stop context.Context, l *leader.Leadership, timer *time.Timer, msgs <-chan *redis.Message, busy map[string]bool) bool {
	for {
		select {
		case <-stop.Done():
			return false
		case <-l.Done():
			// Woken (a pause, a frozen machine) to find the sweep due and
			// the local deadline past, both at once: the sweep still goes
			// out, as it would have had the pause landed a moment later,
			// between the deadline check and the write. Which of the two
			// this select saw first is chance; what keeps the late write
			// out must not be, so it is always the fence that decides.
			select {
			case <-timer.C:
				return true
			default:
			}
			sc.log.Info(LogEpochEnded, "epoch", l.Epoch(), "reason", l.Err())
			if stop.Err() == nil {
				LogEvent(stop, eventsOf(sc.fr), sc.log, events.Event{Kind: events.Lost, Worker: sc.id, Epoch: l.Epoch(),
					Text: fmt.Sprintf("epoch %d: %s stopped acting as scheduler: %v", l.Epoch(), sc.id, l.Err())})
			}
			return false
		case <-timer.C:
			return true
		case m, ok := <-msgs:
			if !ok { // the subscription ended (its client was closed): the timer alone paces the sweeps
				msgs = nil
				continue
			}
			if m.Payload != "drained" {
				continue
			}
			delete(busy, m.Channel)
			if len(busy) == 0 {
				return true
			}
		}
	}
}

// commitDigests: the crawl found over (by this sweep, or by this
// leadership's first), its payload digests join what later crawls refer
// to (seed --dedup-from; payloads.Index.Commit), before the workers
// leave. Under a context of its own: the end it marks stops this worker.
// Not fenced: the copy is the index as it stands while the crawl is over,
// whoever makes it, and a crawl reopened since is refused.
func (sc *scheduler) commitDigests(stop context.Context) {
	if !sc.settings().DedupPayloads {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(stop), sc.cfg.TTL)
	defer cancel()
	n, err := sc.fr.Digests.Commit(ctx)
	switch {
	case errors.Is(err, payloads.ErrNotComplete):
	case err != nil:
		sc.log.Warn("committing the crawl's payload digests failed: later crawls' --dedup-from will not find them until it completes again", "err", err)
	default:
		sc.log.Info("the crawl's payload digests committed, for later crawls' --dedup-from", "digests", n)
		LogEvent(ctx, eventsOf(sc.fr), sc.log, events.Event{Kind: events.Commit, Worker: sc.id,
			Text: fmt.Sprintf("the crawl is complete: %s committed its %d payload digests, which later crawls' --dedup-from refer to", sc.id, n)})
	}
}
