package crawl

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/render"
	"pgregory.net/rapid"
)

// The subresource cache never holds more bytes than its bound, whatever
// the sizes put (0 bytes to past the bound), keeps the most recently used,
// and answers a hit as cached, with the body it was given.
func TestTheSubresourceCacheIsBounded(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		max := rapid.Int64Range(1, 1<<16).Draw(rt, "max")
		c := newSubCache(max)
		bodies := map[string]int{}
		var order []string // most recent last
		touch := func(u string) {
			for i, v := range order {
				if v == u {
					order = append(order[:i], order[i+1:]...)
					break
				}
			}
			order = append(order, u)
		}
		for i := range rapid.IntRange(1, 200).Draw(rt, "ops") {
			u := fmt.Sprintf("http://a/%d", rapid.IntRange(0, 20).Draw(rt, "url"))
			if rapid.Bool().Draw(rt, "get") {
				r, ok := c.get(u)
				if ok {
					if !r.Cached || len(r.Body) != bodies[u] {
						rt.Fatalf("op %d: hit of %s: cached %v, %d bytes; put %d", i, u, r.Cached, len(r.Body), bodies[u])
					}
					touch(u)
				}
				continue
			}
			n := rapid.IntRange(0, int(max)).Draw(rt, "size")
			if _, had := c.get(u); !had {
				c.put(u, &render.Response{Status: 200, Body: make([]byte, n)})
				if _, ok := c.get(u); ok {
					bodies[u] = n
					touch(u)
				}
			}
			if c.size > c.max {
				rt.Fatalf("op %d: %d bytes held; the bound is %d", i, c.size, c.max)
			}
			var sum int64
			for _, e := range c.byURL {
				sum += int64(len(e.Value.(*subEntry).resp.Body) + len(e.Value.(*subEntry).url))
			}
			if sum != c.size {
				rt.Fatalf("op %d: the entries hold %d bytes; the count says %d", i, sum, c.size)
			}
		}
		// The newest entry put and kept is still there: eviction takes the
		// least recently used first.
		if len(order) > 0 {
			if _, ok := c.get(order[len(order)-1]); !ok && int64(bodies[order[len(order)-1]]+len(order[len(order)-1])) <= max/8 {
				rt.Fatalf("the most recently used entry %s was evicted", order[len(order)-1])
			}
		}
	})
}

// What a render worker renders: HTML pages answered 2xx, with --render
// always or auto, or matching --render-match; never a sitemap, an error,
// another type, or with --render never a URL that matches nothing.
func TestWhichPagesARenderWorkerRenders(t *testing.T) {
	html := &fetch.Result{Status: 200, HTML: true}
	for _, c := range []struct {
		mode  string
		match []string
		item  frontier.Item
		res   *fetch.Result
		want  bool
	}{
		{settings.RenderAlways, nil, frontier.Item{URL: "http://a/"}, html, true},
		{settings.RenderAuto, nil, frontier.Item{URL: "http://a/"}, html, true},
		{settings.RenderNever, nil, frontier.Item{URL: "http://a/"}, html, false},
		{settings.RenderNever, []string{`/app/`}, frontier.Item{URL: "http://a/app/1"}, html, true},
		{settings.RenderNever, []string{`/app/`}, frontier.Item{URL: "http://a/doc/1"}, html, false},
		{settings.RenderAlways, nil, frontier.Item{URL: "http://a/s.xml", Kind: frontier.KindSitemap}, html, false},
		{settings.RenderAlways, nil, frontier.Item{URL: "http://a/"}, &fetch.Result{Status: 404, HTML: true}, false},
		{settings.RenderAlways, nil, frontier.Item{URL: "http://a/"}, &fetch.Result{Status: 301, HTML: true}, false},
		{settings.RenderAlways, nil, frontier.Item{URL: "http://a/x.pdf"}, &fetch.Result{Status: 200}, false},
	} {
		s := settings.Default()
		s.Render, s.RenderMatch = c.mode, c.match
		r, err := settings.NewRenderRules(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := renders(r, c.item, c.res); got != c.want {
			t.Errorf("--render %s --render-match %v: %s (status %d, HTML %v): renders %v; want %v", c.mode, c.match, c.item.URL, c.res.Status, c.res.HTML, got, c.want)
		}
	}
	s := settings.Default()
	s.RenderMatch = []string{"("}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "--render-match") {
		t.Errorf("a bad --render-match: %v; want an error naming the flag", err)
	}
	s = settings.Default()
	s.Render = "sometimes"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "render") {
		t.Errorf("--render sometimes: %v; want an error", err)
	}
}

// A page's path prefix is its path's first directory, or "/" at the root.
func TestPathPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"http://a/":               "/",
		"http://a":                "/",
		"http://a/index.html":     "/",
		"http://a/app/":           "/app/",
		"http://a/app/x/y.html":   "/app/",
		"http://a/app?x=/y/":      "/",
		"http://a/a%2Fb/c":        "/a%2Fb/",
		"http://a//double/slash":  "//",
		"http://a/docs/page.html": "/docs/",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := pathPrefix(u); got != want {
			t.Errorf("pathPrefix(%s) = %q; want %q", in, got, want)
		}
	}
}
