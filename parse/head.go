package parse

import (
	"net/url"
	"strings"
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
// (seed --obey-noarchive, --canonical skip). It reads with the scanner
// links are extracted with (scan.go).
func HeadOf(body []byte, agent string) Head {
	var h Head
	s := &scanner{b: body}
	for s.next() {
		if s.end {
			continue
		}
		switch string(s.name) {
		case "body":
			return h
		case "meta":
			if m, ok := metaRobots(s.attr("name", ""), s.attr("content", ""), agent); ok {
				h.Robots.Merge(m)
			}
		case "link":
			if href := s.attr("href", ""); href != "" && h.Canonical == "" && hasToken(s.attr("rel", ""), "canonical") {
				h.Canonical = href
			}
		case "base":
			if href := s.attr("href", ""); href != "" && h.Base == "" {
				h.Base = href
			}
		}
	}
	return h
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
