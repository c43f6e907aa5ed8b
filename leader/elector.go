package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Elector campaigns for one lock key on behalf of one process.
// It is safe for use by several goroutines.
type Elector struct {
	c     redis.Scripter
	key   string
	id    string
	cfg   Config
	clock Clock // local time: the step-down deadline, renewal ticks, retries
}

// NewElector returns an Elector for the lock at key; id names this process
// in Leader and Observe (hostname:pid is a good choice).
func NewElector(c redis.Scripter, key, id string, cfg Config) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if key == "" || id == "" {
		return nil, errors.New("leader: key and id must not be empty")
	}
	clock := cfg.Clock
	if clock == nil {
		clock = systemClock{}
	}
	return &Elector{c: c, key: key, id: id, cfg: cfg, clock: clock}, nil
}

// Key is the lock key the elector campaigns for.
func (e *Elector) Key() string { return e.key }

// Campaign blocks until this process leads, ctx ends, or Redis fails.
// The returned Leadership is renewed in the background until it is lost
// or resigned; its Context is cancelled the moment either happens.
func (e *Elector) Campaign(ctx context.Context) (*Leadership, error) {
	for {
		sent := e.clock.Now()
		lock, err := Obtain(ctx, e.c, e.key, e.id, e.cfg.TTL)
		switch {
		case err == nil:
			deadline := sent.Add(e.cfg.TTL - e.cfg.SafetyMargin)
			if !e.clock.Now().Before(deadline) {
				// The answer came so late that the lock may already be gone
				// by our own reckoning: never report a phantom leadership.
				// Its release may take as long as it would hold (a TTL): a
				// release given up leaves the lock with nobody leading.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.TTL)
				lock.Release(rctx)
				cancel()
				continue
			}
			return e.lead(ctx, lock, deadline), nil
		case !errors.Is(err, ErrNotObtained):
			return nil, fmt.Errorf("leader: campaign: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.clock.After(e.cfg.RetryInterval):
		}
	}
}

// Leader reports the current leader, or ErrNoLeader.
func (e *Elector) Leader(ctx context.Context) (Info, error) {
	info, _, err := Current(ctx, e.c, e.key)
	return info, err
}

// Observe sends the current leader each time it changes (polling every
// RetryInterval); an Info with Epoch 0 means nobody leads. The channel is
// closed when ctx ends. Read errors are skipped, not reported.
func (e *Elector) Observe(ctx context.Context) <-chan Info {
	ch := make(chan Info)
	go func() {
		defer close(ch)
		last := Info{Epoch: -1}
		for {
			info, _, err := Current(ctx, e.c, e.key)
			if err == nil || errors.Is(err, ErrNoLeader) {
				if info.ID != last.ID || info.Epoch != last.Epoch {
					last = info
					select {
					case ch <- Info{ID: info.ID, Epoch: info.Epoch, TTL: info.TTL}:
					case <-ctx.Done():
						return
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-e.clock.After(e.cfg.RetryInterval):
			}
		}
	}()
	return ch
}

// Leadership is one term of office. Its Context ends when the term ends.
type Leadership struct {
	lock   *Lock
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when the renewal loop has exited
	once   sync.Once
	e      *Elector
}

// ErrResigned is the cause of a leadership that ended through Resign.
var ErrResigned = errors.New("leader: resigned")

func (e *Elector) lead(parent context.Context, lock *Lock, deadline time.Time) *Leadership {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	l := &Leadership{lock: lock, ctx: ctx, cancel: cancel, done: make(chan struct{}), e: e}
	go l.renew(deadline)
	return l
}

// Context is cancelled when leadership is lost or resigned; context.Cause
// tells which. Every action taken as leader should run under it.
func (l *Leadership) Context() context.Context { return l.ctx }

// Done is closed when leadership ends.
func (l *Leadership) Done() <-chan struct{} { return l.ctx.Done() }

// Err is nil while leading, then the reason leadership ended.
func (l *Leadership) Err() error { return context.Cause(l.ctx) }

// Epoch is this term's fencing token; pass it to every fence.Script.
func (l *Leadership) Epoch() int64 { return l.lock.epoch }

// Key is the lock key; EpochKey(Key()) is the counter fenced scripts check.
func (l *Leadership) Key() string { return l.lock.key }

// Resign ends the term: renewals stop first, then the lock is released (if
// it is still ours), so a new leader can take over at once.
func (l *Leadership) Resign(ctx context.Context) error {
	l.cancel(ErrResigned)
	<-l.done
	err := l.lock.Release(ctx)
	if errors.Is(err, ErrLockLost) {
		return nil // already gone: nothing of ours to release
	}
	return err
}

// renew keeps the lock alive. It is the only goroutine that renews, and it
// stops acting as leader on the local deadline even while a renewal hangs.
func (l *Leadership) renew(deadline time.Time) {
	defer close(l.done)
	cfg, clock := l.e.cfg, l.e.clock

	type result struct {
		sent time.Time
		err  error
	}
	results := make(chan result, 1)
	inflight := false
	var lastErr error // the most recent failed renewal, for the step-down reason
	rctx, stopRenewals := context.WithCancel(context.Background())
	defer stopRenewals() // abandons a hung renewal when we return

	nextTick := clock.Now().Add(cfg.RenewInterval)
	for {
		now := clock.Now()
		if !now.Before(deadline) {
			why := fmt.Errorf("%w: no successful renewal before the local deadline (TTL %v minus margin %v)",
				ErrLockLost, cfg.TTL, cfg.SafetyMargin)
			if lastErr != nil {
				why = fmt.Errorf("%w; last renewal error: %v", why, lastErr)
			}
			l.cancel(why)
			return
		}
		if !now.Before(nextTick) {
			nextTick = now.Add(cfg.RenewInterval)
			if !inflight { // a renewal that still hangs: the deadline decides
				inflight = true
				go func(sent time.Time) {
					// A renewal slower than the interval is worthless: bound it,
					// so its error is known by the next tick.
					ctx, cancel := context.WithTimeout(rctx, cfg.RenewInterval)
					defer cancel()
					results <- result{sent, l.lock.Refresh(ctx, cfg.TTL)}
				}(now)
			}
		}
		select {
		case <-l.ctx.Done():
			return
		case <-clock.After(earlier(deadline, nextTick).Sub(now)):
		case r := <-results:
			inflight = false
			switch {
			case r.err == nil:
				deadline = later(deadline, r.sent.Add(cfg.TTL-cfg.SafetyMargin))
			case errors.Is(r.err, ErrLockLost):
				l.cancel(fmt.Errorf("%w: the lock expired or another holder took it", ErrLockLost))
				return
			default:
				// Transient (e.g. Redis unreachable): keep trying until the deadline.
				lastErr = r.err
			}
		}
	}
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
