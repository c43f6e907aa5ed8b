package crawl

import (
	"context"
	"errors"
	"net/http"

	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/parse"
	"github.com/redcrawl/crawler/politeness"
)

func (w *Worker) fetchRobots(ctx context.Context, u string) (politeness.RobotsResponse, error) {
	r, err := w.fetcher.FetchBody(ctx, u)
	if errors.Is(err, fetch.ErrBlockedAddress) {
		// Not a robots.txt answer: every fetch from this host will be
		// refused by the same guard, and its record will say why (a
		// "disallowed by robots.txt" would send the user looking in the
		// wrong place).
		return politeness.RobotsResponse{Status: http.StatusNotFound}, nil
	}
	if err != nil {
		return politeness.RobotsResponse{}, err
	}
	return politeness.RobotsResponse{Status: r.Status, Body: r.Body, Location: r.Location}, nil
}

// robotsFetched hears of a robots.txt this process fetched for the whole
// crawl: a Crawl-delay over the cap is counted (status says so), and the
// sitemaps it lists are queued (with Settings.Sitemaps; the Bloom filter
// makes each one queued once).
func (w *Worker) robotsFetched(ctx context.Context, robots string, rt *politeness.RobotsTxt) {
	if _, capped := rt.CrawlDelay(w.settings().AgentToken()); capped {
		w.log.Info("robots.txt asks for a Crawl-delay over the cap: held to it", "robots", robots, "cap", politeness.MaxCrawlDelay)
		if err := w.fr.AddCounts(ctx, map[string]int64{CounterDelayCapped: 1}); err != nil {
			w.log.Warn("counting a capped Crawl-delay failed", "err", err)
		}
	}
	if !w.settings().Sitemaps {
		return
	}
	var items []frontier.Item
	scope := w.scope.Load()
	for _, sm := range rt.Sitemaps {
		if u, err := parse.Canonicalize(nil, sm); err == nil && scope.Allows(u) {
			items = append(items, frontier.Item{URL: u.String(), Kind: frontier.KindSitemap, Parent: robots})
		}
	}
	if len(items) == 0 {
		return
	}
	if _, err := w.fr.Enqueue(ctx, items); err != nil {
		w.log.Warn("queueing sitemaps failed", "robots", robots, "err", err)
	}
}

// CounterCorrupt counts what the frontier's scripts found in the crawl's
// keys that was not well formed and set aside rather than fail on: queue
// elements (put on the failed list) and bucket fields (deleted).
const CounterCorrupt = "corrupt"

// CounterLinksCut counts the pages that had more links than the crawl's
// max-links (their records say how many were left out: links_cut).
const CounterLinksCut = "links_cut"

// CounterDelayCapped counts the robots.txt files that asked for a
// Crawl-delay over politeness.MaxCrawlDelay (each fetch of one).
const CounterDelayCapped = "robots_delay_capped"
