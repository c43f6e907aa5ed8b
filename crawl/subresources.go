package crawl

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/frontier/rendering"
	"github.com/redcrawl/crawler/render"
	"golang.org/x/sync/singleflight"
)

// errOutOfScope refuses a rendered page's request to a host outside the
// crawl's scope (without --render-third-party).
var errOutOfScope = errors.New("outside the crawl's scope (seed --render-third-party allows it)")

// subresources answers the requests of a page of u's host rendered under
// lv, until deadline (the page's own).
func (pl *fetchLoops) subresources(page *url.URL, lv *live, deadline time.Time) render.Fetcher {
	return func(ctx context.Context, r render.Request) (*render.Response, error) {
		u, err := url.Parse(r.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("not an http(s) URL: %q", r.URL)
		}
		u.Fragment = ""
		key := u.String()
		if u.Host != page.Host && !lv.s.RenderThirdParty && !pl.scope.Load().Allows(u) {
			pl.counters.SubresourcesRefused.Add(1)
			if pair := page.Host + " " + u.Host; !pl.refusedHosts.Has(pair) {
				pl.refusedHosts.Add(pair)
				pl.log.Info("a rendered page's request outside the crawl's scope refused (once a host)", "page", page.String(), "url", key)
			}
			return nil, errOutOfScope
		}
		if resp, ok := pl.subs.get(key); ok {
			pl.counters.SubresourceHits.Add(1)
			return resp, nil
		}
		v, err, _ := pl.subs.flight.Do(key, func() (any, error) {
			if resp, ok := pl.subs.get(key); ok { // fetched while this call waited its turn
				return resp, nil
			}
			kind := subKind(r.Type)
			if resp, ok := pl.sharedSub(ctx, key, kind); ok { // another render worker fetched it
				return resp, nil
			}
			return pl.subresource(ctx, u, key, kind, deadline)
		})
		if err != nil {
			return nil, err
		}
		return v.(*render.Response), nil
	}
}

// sharedSub is key's answer in the crawl's shared cache (another render
// worker fetched it: frontier.GetSub), kept in this worker's too. A cache
// that cannot be read is a miss.
func (pl *fetchLoops) sharedSub(ctx context.Context, key string, kind rendering.SubKind) (*render.Response, bool) {
	s, ok, err := pl.renderCall().GetSub(ctx, key, kind)
	if err != nil {
		pl.log.Warn("reading the shared subresource cache failed: fetched instead", "url", key, "err", err)
	}
	if !ok {
		return nil, false
	}
	pl.counters.SubresourceHits.Add(1)
	resp := &render.Response{Status: s.Status, ContentType: s.ContentType, Location: s.Location, Body: s.Body}
	pl.subs.put(key, resp)
	r := *resp
	r.Cached = true
	return &r, true
}

// subresource fetches one subresource as the crawl fetches anything:
// robots.txt, a token of its host's bucket (waited for, until the page's
// deadline), the fetcher (and its address guard), the archive; a 2xx
// answer is cached, in this worker and in the crawl's shared cache.
func (pl *fetchLoops) subresource(ctx context.Context, u *url.URL, key string, kind rendering.SubKind, deadline time.Time) (*render.Response, error) {
	if v, err := pl.robots.Check(ctx, u); err != nil {
		return nil, fmt.Errorf("robots.txt of %s: %w", u.Host, err)
	} else if !v.Allowed {
		return nil, errors.New("disallowed by robots.txt")
	}
	if err := pl.token(ctx, u.Host, deadline); err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := pl.fetcher.FetchBody(ctx, key)
	pl.counters.Requests.Add(1)
	pl.counters.Subresources.Add(1)
	if err != nil {
		return nil, err
	}
	if pl.warc != nil && res.Raw != nil {
		if _, _, err := pl.warc.Archive(archive.Exchange{URL: key, Started: start, Raw: res.Raw, Truncated: res.Truncated}, nil); err != nil {
			pl.fail(archiveFailed(err))
			return nil, err
		}
	}
	resp := &render.Response{Status: res.Status, ContentType: res.ContentType, Body: res.Body, Location: res.Location}
	if res.Status >= 200 && res.Status < 300 && !res.Truncated {
		pl.subs.put(key, resp)
		if _, err := pl.renderCall().PutSub(ctx, key, kind, rendering.Sub{Status: res.Status, ContentType: res.ContentType, Body: res.Body}); err != nil {
			pl.log.Warn("keeping a subresource in the shared cache failed: other workers fetch it again", "url", key, "err", err)
		}
	}
	return resp, nil
}

// subKind is the shared cache's kind of a subresource of the browser's
// resource type (Chromium's names): what many pages share, or one page's
// data.
func subKind(resourceType string) rendering.SubKind {
	switch resourceType {
	case "Script", "Stylesheet", "Font", "Image", "Media", "TextTrack", "Manifest":
		return rendering.SubAsset
	}
	return rendering.SubData
}

// token waits for a token of host's bucket, by deadline at the latest.
func (pl *fetchLoops) token(ctx context.Context, host string, deadline time.Time) error {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("no token of %s before the page's end", host)
		}
		t, err := pl.renderCall().TakeToken(ctx, host, left)
		var no *rendering.NoTokenError
		switch {
		case errors.As(err, &no):
			if no.Retry >= left {
				return fmt.Errorf("no token of %s before the page's end", host)
			}
			sleep(ctx, no.Retry)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		case err != nil:
			return err
		}
		if d := time.Until(t.NotBefore); d > 0 {
			sleep(ctx, d)
		}
		return ctx.Err()
	}
}

// subCache is a render worker's cache of subresources by URL, shared by
// its tabs, bounded in bytes: the least recently used go first.
type subCache struct {
	flight singleflight.Group
	mu     sync.Mutex
	max    int64
	size   int64
	order  *list.List // of *subEntry, most recent first
	byURL  map[string]*list.Element
}

type subEntry struct {
	url  string
	resp *render.Response
}

func newSubCache(max int64) *subCache {
	return &subCache{max: max, order: list.New(), byURL: map[string]*list.Element{}}
}

func (c *subCache) get(url string) (*render.Response, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byURL[url]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	r := *e.Value.(*subEntry).resp
	r.Cached = true
	return &r, true
}

func (c *subCache) put(url string, r *render.Response) {
	n := int64(len(r.Body) + len(url))
	if n > c.max/8 { // one entry never takes more than an eighth
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byURL[url]; ok {
		return
	}
	c.byURL[url] = c.order.PushFront(&subEntry{url: url, resp: r})
	c.size += n
	for c.size > c.max {
		last := c.order.Back()
		e := last.Value.(*subEntry)
		c.order.Remove(last)
		delete(c.byURL, e.url)
		c.size -= int64(len(e.resp.Body) + len(e.url))
	}
}
