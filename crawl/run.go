package crawl

import (
	"context"
	"sync"
	"sync/atomic"
)

// ending is how one Worker.Run ends, learned in one place. Whatever stops a
// run tells it here — the caller's context, the crawl's end (crawlOver), a
// failure such as a full disk (fail), the crawl gone from Redis (markGone)
// — and Run, once every goroutine it started has returned, asks it what to
// return (err, gone). It owns the run's two contexts:
//
//   - stop ends the taking of new URLs: the caller's context, the crawl's
//     end, a failure and a gone crawl all end it;
//   - work carries what is in progress, which finishes after a stop (pages
//     being fetched, the last exchange, the scheduler's resignation);
//     only a gone crawl ends it, as then nothing can be written anyway.
type ending struct {
	stop, work             context.Context
	cancelStop, cancelWork context.CancelFunc

	mu      sync.Mutex
	failure error // the first failure; nil: none
	isGone  atomic.Bool
}

func newEnding(ctx context.Context) *ending {
	e := &ending{}
	e.stop, e.cancelStop = context.WithCancel(ctx)
	e.work, e.cancelWork = context.WithCancel(context.WithoutCancel(ctx))
	return e
}

// crawlOver: the crawl is finished (ExitWhenDone): stop, with no error.
func (e *ending) crawlOver() { e.cancelStop() }

// fail stops the run; it returns err, unless an earlier failure came first.
func (e *ending) fail(err error) {
	e.mu.Lock()
	if e.failure == nil {
		e.failure = err
	}
	e.mu.Unlock()
	e.cancelStop()
}

// markGone: the crawl is gone from Redis; everything stops at once.
func (e *ending) markGone() {
	e.isGone.Store(true)
	e.cancelStop()
	e.cancelWork()
}

// gone reports whether the crawl was found gone.
func (e *ending) gone() bool { return e.isGone.Load() }

// err is the first failure (nil: none).
func (e *ending) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.failure
}

// release ends both contexts, once the run is over.
func (e *ending) release() {
	e.cancelStop()
	e.cancelWork()
}

// crew runs a run's goroutines in stages, and stops the stages in the
// order they were made: each is told to stop (its stop, if any) once every
// stage before it has returned, and waited for.
type crew struct{ stages []*stage }

type stage struct {
	stop func()
	wg   sync.WaitGroup
}

// stage adds a stage that stop tells to stop (nil: it stops by itself).
func (c *crew) stage(stop func()) *stage {
	s := &stage{stop: stop}
	c.stages = append(c.stages, s)
	return s
}

// goRun runs f in the stage.
func (s *stage) goRun(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// wait stops the stages in order, and returns once all have returned.
func (c *crew) wait() {
	for _, s := range c.stages {
		if s.stop != nil {
			s.stop()
		}
		s.wg.Wait()
	}
}
