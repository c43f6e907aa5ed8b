package crawl

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/parse"
)

// sitemapLinks are what a sitemap lists: page URLs (one step from the
// sitemap, through scope, filters and dedup like links) and other
// sitemaps (an index), read from the body, gunzipped when it is gzip.
func (pl *fetchLoops) sitemapLinks(lv *live, p page, r *fetch.Result, rec *Record) []frontier.Item {
	if r.Status < 200 || r.Status >= 300 {
		return nil
	}
	var body io.Reader = bytes.NewReader(r.Body)
	if len(r.Body) > 2 && r.Body[0] == 0x1f && r.Body[1] == 0x8b {
		z, err := gzip.NewReader(body)
		if err != nil {
			rec.Error = fmt.Sprintf("sitemap: %v", err)
			return nil
		}
		defer z.Close()
		body = z
	}
	sm, err := parse.ParseSitemap(body)
	if err != nil {
		rec.Error = err.Error()
		return nil
	}
	rec.Links, rec.Truncated = len(sm.URLs)+len(sm.Sitemaps), rec.Truncated || sm.Truncated
	base := p.url
	// sitemaps.org's location rule: a sitemap lists URLs under its own
	// directory, and sitemaps of its own site, unless robots.txt listed it
	// (the site's owner vouches for it there).
	site := base.Scheme + "://" + base.Host + "/"
	dir := site
	if !strings.HasSuffix(p.Parent, "/robots.txt") {
		dir = base.Scheme + "://" + base.Host + base.EscapedPath()[:strings.LastIndexByte(base.EscapedPath(), '/')+1]
	}
	scope := pl.scope.Load()
	var children []frontier.Item
	for i, loc := range sm.URLs {
		u, err := parse.CanonicalizeKeeping(base, loc, lv.s.KeepTrackingParams)
		if err != nil || !scope.Allows(u) {
			continue
		}
		if s := u.String(); !strings.HasPrefix(s, dir) {
			pl.skips.add("sitemap_location")
		} else if pl.follow(lv, u, s) {
			children = append(children, frontier.Item{URL: s, Depth: p.Depth + 1, Parent: p.URL, Priority: SitemapPriority(sm.Priority(i))})
		}
	}
	for _, loc := range sm.Sitemaps {
		if u, err := parse.Canonicalize(base, loc); err == nil && scope.Allows(u) && strings.HasPrefix(u.String(), site) {
			children = append(children, frontier.Item{URL: u.String(), Depth: p.Depth, Parent: p.URL, Kind: frontier.KindSitemap})
		}
	}
	return children
}

// sitemapRoom keeps of a sitemap's children (its own site's: the location
// rule) what its host's page cap leaves room for, read in one call; the
// exchange would drop the rest, but mark each seen on the way, tens of
// thousands a sitemap. The rest are counted as the exchange counts them.
func (pl *fetchLoops) sitemapRoom(ctx context.Context, lv *live, host string, children []frontier.Item) []frontier.Item {
	hostCap := lv.s.MaxPagesPerHost
	if hostCap <= 0 || int64(len(children)) <= hostCap {
		return children
	}
	room, err := pl.lf.hosts.Room(ctx, host, hostCap)
	if err != nil || room >= int64(len(children)) {
		return children // the exchange holds the cap all the same
	}
	pl.skips.addN("max_pages_per_host", int64(len(children))-room)
	return children[:room]
}

// SitemapPriority is the priority among its host's URLs (frontier.Item.
// Priority) of a URL a sitemap gave priority p (0.0 to 1.0, 0.5 by
// default): a tenth above the default is a level up, to 5 for 1.0 and -5
// for 0.0. A sitemap's priorities only order its own site's URLs, as the
// protocol asks; links found on pages are at 0.
func SitemapPriority(p float64) int {
	return max(-5, min(5, int(math.Round((p-0.5)*10))))
}
