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
	c   redis.Scripter
	key string
	id  string
	cfg Config
	now func() time.Time // local clock, only for the step-down deadline
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
	return &Elector{c: c, key: key, id: id, cfg: cfg, now: time.Now}, nil
}

// Key is the lock key the elector campaigns for.
func (e *Elector) Key() string { return e.key }

// Campaign blocks until this process leads, ctx ends, or Redis fails.
// The returned Leadership is renewed in the background until it is lost
// or resigned; its Context is cancelled the moment either happens.
func (e *Elector) Campaign(ctx context.Context) (*Leadership, error) {
	for {
		sent := e.now()
		lock, err := Obtain(ctx, e.c, e.key, e.id, e.cfg.TTL)
		switch {
		case err == nil:
			deadline := sent.Add(e.cfg.TTL - e.cfg.SafetyMargin)
			if !e.now().Before(deadline) {
				// The answer came so late that the lock may already be gone
				// by our own reckoning: never report a phantom leadership.
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.RetryInterval)
				lock.Release(rctx)
				cancel()
				continue
			}
			return e.lead(ctx, lock, deadline), nil
		case !errors.Is(err, ErrNotObtained):
			return nil, fmt.Errorf("leader: campaign: %w", err)
		}
		t := time.NewTimer(e.cfg.RetryInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
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
		t := time.NewTicker(e.cfg.RetryInterval)
		defer t.Stop()
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
			case <-t.C:
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
	cfg := l.e.cfg
	stepDown := time.NewTimer(deadline.Sub(l.e.now()))
	defer stepDown.Stop()
	tick := time.NewTicker(cfg.RenewInterval)
	defer tick.Stop()

	type result struct {
		sent time.Time
		err  error
	}
	results := make(chan result, 1)
	inflight := false
	var lastErr error // the most recent failed renewal, for the step-down reason
	rctx, stopRenewals := context.WithCancel(context.Background())
	defer stopRenewals() // abandons a hung renewal when we return

	for {
		select {
		case <-l.ctx.Done():
			return
		case <-stepDown.C:
			why := fmt.Errorf("%w: no successful renewal before the local deadline (TTL %v minus margin %v)",
				ErrLockLost, cfg.TTL, cfg.SafetyMargin)
			if lastErr != nil {
				why = fmt.Errorf("%w; last renewal error: %v", why, lastErr)
			}
			l.cancel(why)
			return
		case <-tick.C:
			if inflight {
				continue // the previous renewal still hangs; the deadline decides
			}
			inflight = true
			sent := l.e.now()
			go func() {
				// A renewal slower than the interval is worthless: bound it,
				// so its error is known by the next tick.
				ctx, cancel := context.WithTimeout(rctx, cfg.RenewInterval)
				defer cancel()
				results <- result{sent, l.lock.Refresh(ctx, cfg.TTL)}
			}()
		case r := <-results:
			inflight = false
			switch {
			case r.err == nil:
				next := r.sent.Add(cfg.TTL - cfg.SafetyMargin)
				if next.After(deadline) {
					deadline = next
					stepDown.Reset(deadline.Sub(l.e.now()))
				}
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
