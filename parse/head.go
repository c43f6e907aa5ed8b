package parse

import (
	"bytes"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// Head is what an HTML document says of itself before its body: its
// robots meta tags (for every crawler or the agent's own), its first
// <link rel=canonical> and its <base href>, as written.
type Head struct {
	Robots    Robots
	Canonical string
	Base      string
}

// HeadOf reads an HTML document up to its body (where these belong), for
// decisions taken before the page is parsed whole: whether to archive it
// (seed --obey-noarchive, --canonical skip).
func HeadOf(body []byte, agent string) Head {
	var h Head
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return h
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			attrs := map[string]string{}
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				if _, dup := attrs[string(k)]; !dup { // the first of a repeated attribute counts, as in a browser
					attrs[string(k)] = string(v)
				}
			}
			switch string(name) {
			case "body":
				return h
			case "meta":
				if m, ok := metaRobots(attrs["name"], attrs["content"], agent); ok {
					h.Robots.Merge(m)
				}
			case "link":
				if href := attrs["href"]; href != "" && h.Canonical == "" && hasToken(attrs["rel"], "canonical") {
					h.Canonical = href
				}
			case "base":
				if href := attrs["href"]; href != "" && h.Base == "" {
					h.Base = href
				}
			}
		}
	}
}

// CanonicalOf is the canonical URL a response at page declares: a Link
// header's rel="canonical" (linkHeaders: its Link header values; any type
// of response can send one), else its HTML head's <link rel=canonical>,
// resolved against its <base href>; canonicalized as its links are. Nil
// when it declares none that is an http(s) URL.
func CanonicalOf(page *url.URL, linkHeaders []string, head Head, keepTracking bool) *url.URL {
	if t := LinkTargets(linkHeaders, "canonical"); len(t) > 0 {
		if u, err := CanonicalizeKeeping(page, t[0], keepTracking); err == nil {
			return u
		}
	}
	if head.Canonical == "" {
		return nil
	}
	base := page
	if head.Base != "" {
		base = baseFor(page, head.Base)
	}
	u, err := CanonicalizeKeeping(base, strings.TrimSpace(head.Canonical), keepTracking)
	if err != nil {
		return nil
	}
	return u
}
