package crawl

import (
	"context"

	"github.com/redcrawl/crawler/frontier"
)

// Progress is the cheap part of a crawl's status, two round trips, for a
// progress line redrawn every second.
type Progress struct {
	Frontier frontier.Sizes
	Counters map[string]int64 // the crawl's counters, as in Status
}

// Progress reads the crawl's queue sizes and counters.
func (w *Worker) Progress(ctx context.Context) (Progress, error) {
	var p Progress
	var err error
	if p.Frontier, err = w.fr.Sizes(ctx); err != nil {
		return p, err
	}
	p.Counters, err = ReadCounters(ctx, w.fr)
	return p, err
}

// ReadCounters reads the crawl's counters, added up over its shards,
// every one of the usual ones present, zero or not.
func ReadCounters(ctx context.Context, fr *frontier.Frontier) (map[string]int64, error) {
	n, err := fr.Stats(ctx)
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"pages", OutcomeOK, OutcomeHTTPError, OutcomeFailed, OutcomeSkipped, OutcomeUnchanged, "enqueued", "offered", "records",
		"change:" + ChangeNew, "change:" + ChangeChanged, "change:" + ChangeUnchanged, "change:" + ChangeGone} {
		n[f] += 0
	}
	return n, nil
}
