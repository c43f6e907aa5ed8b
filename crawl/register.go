package crawl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/redisconn"
)

// oomRetry is how soon a worker tries again a write that Redis refused for
// want of memory: soon, so its registration lives again soon after memory
// frees.
const oomRetry = 500 * time.Millisecond

// register joins the crawl's registry under the worker's id. A live
// registration of the same id is either an earlier run of this worker
// that was killed (a container restarted keeps its host name and pid),
// which lapses within a lease, or a second process given the same id,
// which heartbeats on: the first is waited out, the second refused —
// two workers under one id would share WARC file names and deregister
// each other.
func (w *Worker) register(ctx context.Context) error {
	deadline := w.now().Add(w.opts.Lease + w.opts.Lease/2)
	for {
		left, err := w.fr.Registry.Register(ctx, w.opts.ID)
		if redisconn.IsOOM(err) {
			// As a running worker does: wait until Redis has memory again.
			w.log.Warn("Redis is out of memory and refuses writes; waiting for memory to free before joining "+
				"(raise maxmemory, or free memory)", "err", err)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(oomRetry):
			}
			deadline = w.now().Add(w.opts.Lease + w.opts.Lease/2)
			continue
		}
		if !errors.Is(err, ErrIDInUse) {
			return err
		}
		if w.now().Add(left).After(deadline) {
			return fmt.Errorf("crawl: worker %q of crawl %q: %w; give each worker its own --id "+
				"(the default, host:pid, is distinct unless hosts share a name)", w.opts.ID, w.name, ErrIDInUse)
		}
		w.log.Warn("a worker with this id is registered as alive; waiting for that registration to lapse "+
			"(an earlier run that was killed?)", "for", left.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(left + 10*time.Millisecond):
		}
	}
}
