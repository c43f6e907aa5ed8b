package admin

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redis/go-redis/v9"
)

// RecrawlReport is what Recrawl did.
type RecrawlReport struct {
	Due        int64 // URLs due by the recrawl (every one on the schedule, with all)
	Scheduled  int64 // URLs on the schedule
	Continuous bool  // the crawl revisits by itself (seeded with --revisit)
	// NextDue is, when none is due, how long until the first is (-1: none
	// on the schedule).
	NextDue time.Duration
}

// Recrawl runs a crawl again: the URLs its schedule says are due (all:
// every URL fetched, but those gone for good) are handed back to the
// queues by the scheduler's sweep as workers run, each refetched with its
// last validators; the crawl keeps its settings, Bloom filter and records,
// and ends again once they are fetched.
func Recrawl(ctx context.Context, c redis.UniversalClient, name string, all bool) (RecrawlReport, error) {
	s, fr, err := crawl.LoadFrontier(ctx, c, name)
	if err != nil {
		return RecrawlReport{}, err
	}
	if !s.KeepVisits {
		return RecrawlReport{}, fmt.Errorf("crawl %q was seeded with --keep-visits=false: it kept nothing to refetch by; seed a new crawl", name)
	}
	if s.MaxPages > 0 {
		n, err := fr.Stats(ctx)
		if err != nil {
			return RecrawlReport{}, err
		}
		if n["pages"] >= s.MaxPages {
			return RecrawlReport{}, fmt.Errorf("crawl %q spent its page budget (--max-pages %d counts refetches too): nothing could be refetched; seed a new crawl to run it again",
				name, s.MaxPages)
		}
	}
	due, err := fr.Visits.Recrawl(ctx, all)
	if err != nil {
		return RecrawlReport{}, fmt.Errorf("crawl: recrawl: %w", err)
	}
	rv, err := fr.Visits.Read(ctx)
	if err != nil {
		return RecrawlReport{}, err
	}
	what := "the pages due"
	if all {
		what = "every page"
	}
	crawl.LogEvent(ctx, fr.Events, slog.New(slog.DiscardHandler), events.Event{Kind: events.Recrawl,
		Text: fmt.Sprintf("a recrawl of %s was asked for: %d of %d pages due; the scheduler's sweeps queue them under its fence", what, due, rv.Scheduled)})
	return RecrawlReport{Due: due, Scheduled: rv.Scheduled, Continuous: s.Revisit > 0, NextDue: rv.NextDue}, nil
}
