package crawl

import (
	"context"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/frontier/records"
)

// Export groups (export --follow --group): the scheduler trims the results
// streams below what every group acknowledged, after each sweep, and says
// when a group lags toward the streams' cap, past which the oldest records
// it has not read are dropped; status lists the groups.

// LagWarnAt is the share of the results streams' cap (seed
// --results-kept; each shard's share of it, with shards) a group may be
// behind before the crawl says it lags.
const LagWarnAt = 0.8

// trimEvery spaces the trims: each reads every shard's groups (a round
// trip a shard), which a sweep a second need not pay each time.
const trimEvery = 10 * time.Second

// trimResults trims what every group acknowledged, every trimEvery at
// most, and says a lagging group, once a minute at most.
func (sc *scheduler) trimResults(ctx context.Context) {
	if time.Since(sc.trimmed) < trimEvery {
		return
	}
	sc.trimmed = time.Now()
	if _, err := sc.fr.Records.TrimAcked(ctx); err != nil {
		sc.log.Warn("trimming the results below what every export group acknowledged failed; the streams keep them", "err", err)
		return
	}
	if time.Since(sc.lagSaid) < time.Minute {
		return
	}
	gs, err := sc.fr.Records.Groups(ctx)
	if err != nil {
		return
	}
	kept := sc.settings().ResultsKept
	for _, g := range gs {
		if Lagging(g) {
			sc.lagSaid = time.Now()
			sc.log.Warn("an export group lags: past the results streams' cap its oldest unread records are dropped",
				"group", g.Name, "behind", g.Behind(), "cap", kept)
			LogEvent(ctx, eventsOf(sc.fr), sc.log, events.Event{Kind: events.Lagging, Worker: sc.id,
				Text: fmt.Sprintf("export group %s is %d records behind (the streams keep %d: seed --results-kept): read it, or its oldest unread records are dropped", g.Name, g.Behind(), kept)})
		}
	}
}

// Lagging: g is behind by LagWarnAt of a shard's cap or more, in some
// shard.
func Lagging(g records.GroupState) bool {
	return g.Fill >= LagWarnAt
}
