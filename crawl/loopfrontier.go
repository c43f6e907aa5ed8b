package crawl

import (
	"context"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/frontier/nearpages"
	"github.com/redcrawl/crawler/frontier/payloads"
	"github.com/redcrawl/crawler/frontier/rendering"
)

// loopFrontier is the frontier as a fetch loop uses it, beside what its
// exchanger sends: a host's controls (a pause, its delay, its room under
// the page cap), the payload digests' claims, the near-duplicate index, the event log, what render
// workers share, and the queue for the links a sample's rendering found.
type loopFrontier struct {
	hosts   frontier.Hosts
	digests payloads.Index
	near    nearpages.Index
	events  events.Log
	render  rendering.Shared
	enqueue func(context.Context, []frontier.Item) ([]bool, error)
}

func newLoopFrontier(fr *frontier.Frontier) loopFrontier {
	return loopFrontier{hosts: fr.Hosts, digests: fr.Digests, near: fr.Near, events: fr.Events, render: fr.Render, enqueue: fr.Enqueue}
}
