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

// sitemapsFound queues the sitemaps a host's robots.txt lists (this
// process fetched it for the whole crawl); the Bloom filter makes each
// one queued once.
func (w *Worker) sitemapsFound(ctx context.Context, host string, sitemaps []string) {
	robots := "http://" + host + "/robots.txt"
	var items []frontier.Item
	scope := w.scope.Load()
	for _, sm := range sitemaps {
		if u, err := parse.Canonicalize(nil, sm); err == nil && scope.Allows(u) {
			items = append(items, frontier.Item{URL: u.String(), Kind: frontier.KindSitemap, Parent: robots})
		}
	}
	if len(items) == 0 {
		return
	}
	if _, err := w.fr.Enqueue(ctx, items); err != nil {
		w.log.Warn("queueing sitemaps failed", "host", host, "err", err)
	}
}
