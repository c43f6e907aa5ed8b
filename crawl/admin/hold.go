package admin

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redis/go-redis/v9"
)

// Pausing the whole crawl (crawler pause, crawler resume): a key in each
// shard that the pops read (frontier.Frontier.Control.Pause), so no worker needs
// to have heard anything. Workers finish the pages they hold, send them,
// and wait, their leases renewed; the scheduler sweeps on; an
// --exit-when-done worker does not take a paused crawl for a finished one
// (it has URLs queued), and pops again when it is resumed (each shard's
// wake channel, or within frontier's idle wait should that be missed).

// Pause pauses crawl name (see above); who is said in status and the
// event log. changed is false when it was paused already.
func Pause(ctx context.Context, c redis.UniversalClient, name, who string) (changed bool, err error) {
	return hold(ctx, c, name, who, true)
}

// Resume ends crawl name's pause; changed is false when it was not
// paused.
func Resume(ctx context.Context, c redis.UniversalClient, name, who string) (changed bool, err error) {
	return hold(ctx, c, name, who, false)
}

func hold(ctx context.Context, c redis.UniversalClient, name, who string, pause bool) (bool, error) {
	fr, err := crawl.ReadFrontier(ctx, c, name)
	if err != nil {
		return false, err
	}
	var changed bool
	if pause {
		changed, err = fr.Control.Pause(ctx, who)
	} else {
		changed, err = fr.Control.Resume(ctx)
	}
	if err != nil {
		return changed, fmt.Errorf("crawl %q: %w", name, err)
	}
	if changed {
		e := events.Event{Kind: events.Hold, Text: fmt.Sprintf("the crawl was paused by %s: no URL is handed out until it is resumed", who)}
		if !pause {
			e = events.Event{Kind: events.Resume, Text: fmt.Sprintf("the crawl was resumed by %s", who)}
		}
		crawl.LogEvent(ctx, fr.Events, slog.New(slog.DiscardHandler), e)
	}
	return changed, nil
}
