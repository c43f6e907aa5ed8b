package crawl

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/events"
)

// The crawl's event log (events.Event): what the coordination did, in a
// sentence a learner can follow, written as it happens. An event that
// cannot be written is only logged: the log is for people, and the crawl
// does not wait for it.

// LogEvent appends e to the crawl's log (events), within a second.
func LogEvent(ctx context.Context, to events.Log, log *slog.Logger, e events.Event) {
	if to == (events.Log{}) {
		return // a part tested on its own
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := to.Add(ctx, e); err != nil {
		log.Debug("event not logged", "text", e.Text, "err", err)
	}
}

// eventsOf is fr's event log (none for a nil fr: a part tested on its
// own).
func eventsOf(fr *frontier.Frontier) events.Log {
	if fr == nil {
		return events.Log{}
	}
	return fr.Events
}

// leadText is the sentence for worker id taking the lock under epoch,
// told from the log's newest events (newest first): whose lock it was
// before, and how that one's term ended.
func leadText(recent []events.Event, id string, epoch int64) string {
	for _, e := range recent {
		if e.Kind != events.Lead || e.Epoch >= epoch {
			continue
		}
		how := fmt.Sprintf("after %s's lease ran out (no renewal within the lock's TTL)", e.Worker)
		for _, f := range recent {
			if f.Epoch == e.Epoch && f.Kind == events.Resign {
				how = fmt.Sprintf("after %s handed it over", e.Worker)
			}
		}
		if e.Worker == id {
			how = "again " + how
		}
		return fmt.Sprintf("epoch %d: %s took the lock %s", epoch, id, how)
	}
	return fmt.Sprintf("epoch %d: %s took the lock", epoch, id)
}
