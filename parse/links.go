package parse

import (
	"bytes"
	"io"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// Limits bound what one page may cost; a hostile page cannot exceed them.
type Limits struct {
	// KeepTracking keeps tracking parameters (utm_*, gclid, ...) in links.
	KeepTracking bool
	MaxLinks     int // links kept per page (default 1000); Page.Truncated tells
	MaxTitle     int // bytes of title kept (default 512)
	// Agent is the crawler's product token: <meta name="AGENT"> is read
	// as <meta name="robots"> is (Page.Robots).
	Agent string
	// Memo, if set, remembers links' canonical forms from page to page
	// (a worker's pages share one).
	Memo *Memo
}

func (l Limits) withDefaults() Limits {
	if l.MaxLinks <= 0 {
		l.MaxLinks = 1000
	}
	if l.MaxTitle <= 0 {
		l.MaxTitle = 512
	}
	return l
}

// Page is what the crawler keeps of an HTML document.
type Page struct {
	Title string
	// Links are canonical, in-document order, without repeats; nofollow
	// links are left out, and all links when the page says
	// <meta name="robots" content="nofollow">.
	Links []string
	// Canonical is the page's <link rel="canonical">, if any (also in Links).
	Canonical string
	// NoFollow is set by <meta name="robots" content="nofollow|none"> (or
	// the crawler's own name: Limits.Agent).
	NoFollow bool
	// Robots are what the page's robots meta tags say (its NoFollow too).
	Robots Robots
	// Truncated is set when the page had more links than Limits.MaxLinks;
	// Cut counts the links left out past the cap (a link repeated past
	// it counts each time: keeping the cut ones apart would cost memory a
	// hostile page chooses).
	Truncated bool
	Cut       int
	// Dropped counts hrefs that were not usable URLs (bad syntax, mailto:, …).
	Dropped int
	// Fields are the values of the fields asked for, by name: a string
	// (a field's first match), or a list of strings (Field.All).
	Fields map[string]any
}

// Extract parses an HTML document fetched from pageURL and returns its title
// and links: a[href], area[href], iframe[src], frame[src],
// link[rel=canonical], and the target of <meta http-equiv="refresh">
// (a refresh page is a redirect, not a dead end), resolved against the
// page's <base href> from where it appears (it belongs in <head>, before
// any link); and the text of each field's first match.
//
// Without fields, Extract scans: the body is read once, from tag to tag
// (scan.go), and only link-bearing tags have their attributes decoded —
// no document tree, which costs several times more than the links
// themselves (bench/README.md). Fields need the tree (CSS selectors),
// and get it.
func Extract(pageURL *url.URL, body io.Reader, lim Limits, fs ...Field) (*Page, error) {
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	return ExtractBytes(pageURL, data, lim, fs...), nil
}

// ExtractBytes is Extract of a document in memory (no reader, no error).
func ExtractBytes(pageURL *url.URL, data []byte, lim Limits, fs ...Field) *Page {
	lim = lim.withDefaults()
	if len(fs) == 0 {
		return extractTokens(pageURL, data, lim)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(data))
	if err != nil {
		// The tree builder gives up on some hostile pages (more than 512
		// open elements); the scanner still finds their links.
		return extractTokens(pageURL, data, lim)
	}
	base := pageURL
	if href, ok := doc.Find("base[href]").First().Attr("href"); ok {
		base = baseFor(pageURL, href)
	}
	p := &Page{Fields: fields(doc, fs)}
	p.Title = clipTitle(doc.Find("title").First().Text(), lim)
	doc.Find("meta[name]").Each(func(_ int, s *goquery.Selection) {
		p.meta(s.AttrOr("name", ""), s.AttrOr("content", ""), lim.Agent)
	})
	ls := &linkSet{p: p, base: base, lim: lim, seen: map[string]bool{}}
	doc.Find("a[href], area[href], iframe[src], frame[src], link[rel][href], meta[http-equiv][content]").Each(func(_ int, s *goquery.Selection) {
		ls.element(goquery.NodeName(s), s.AttrOr)
	})
	return p
}

// linkSet collects a page's links: canonical, each once, up to the limit.
type linkSet struct {
	p    *Page
	base *url.URL
	keys baseKeys // the base's keys in lim.Memo, once asked
	lim  Limits
	seen map[string]bool
}

// setBase makes b the base links are resolved against (<base href>).
func (ls *linkSet) setBase(b *url.URL) {
	ls.base, ls.keys = b, baseKeys{}
}

func (ls *linkSet) add(ref string) {
	if ls.p.NoFollow {
		return
	}
	s, err := ls.lim.Memo.canonical(ls.base, &ls.keys, ref, ls.lim.KeepTracking)
	if err != nil {
		ls.p.Dropped++
		return
	}
	if ls.seen[s] {
		return
	}
	if len(ls.p.Links) >= ls.lim.MaxLinks {
		ls.p.Truncated = true
		ls.p.Cut++
		return
	}
	ls.seen[s] = true
	ls.p.Links = append(ls.p.Links, s)
}

// element takes the links of one element, by name, with attr(name,
// default) reading its attributes.
func (ls *linkSet) element(name string, attr func(string, string) string) {
	switch name {
	case "a", "area":
		if href := attr("href", ""); href != "" && !hasToken(attr("rel", ""), "nofollow") {
			ls.add(href)
		}
	case "iframe", "frame":
		if src := attr("src", ""); src != "" {
			ls.add(src)
		}
	case "link":
		if href := attr("href", ""); href != "" && hasToken(attr("rel", ""), "canonical") {
			if u, err := CanonicalizeKeeping(ls.base, href, ls.lim.KeepTracking); err == nil && ls.p.Canonical == "" {
				ls.p.Canonical = u.String()
			}
			ls.add(href)
		}
	case "meta":
		if strings.EqualFold(strings.TrimSpace(attr("http-equiv", "")), "refresh") {
			if target, ok := refreshTarget(attr("content", "")); ok {
				ls.add(target)
			}
		}
	}
}

// baseFor is the base URL a page's <base href> sets, if usable.
func baseFor(pageURL *url.URL, href string) *url.URL {
	if b, err := pageURL.Parse(strings.TrimSpace(href)); err == nil && (b.Scheme == "http" || b.Scheme == "https") {
		return b
	}
	return pageURL
}

func clipTitle(text string, lim Limits) string {
	title := strings.Join(strings.Fields(text), " ")
	if len(title) > lim.MaxTitle {
		title = strings.ToValidUTF8(title[:lim.MaxTitle], "")
	}
	return title
}

// meta reads a <meta name content>: a robots meta tag's directives, for
// every crawler or agent's own.
func (p *Page) meta(name, content, agent string) {
	if r, ok := metaRobots(name, content, agent); ok {
		p.Robots.Merge(r)
		p.NoFollow = p.Robots.NoFollow
	}
}

// linkTags are the tags whose attributes extractTokens reads.
var linkTags = map[string]bool{"a": true, "area": true, "iframe": true, "frame": true, "link": true, "meta": true,
	"base": true}

// extractTokens finds a page's title and links in one pass of a scanner
// (scan.go): only the tags in linkTags have their attributes decoded,
// and only the values asked for.
func extractTokens(pageURL *url.URL, body []byte, lim Limits) *Page {
	p := &Page{}
	ls := &linkSet{p: p, base: pageURL, lim: lim, seen: map[string]bool{}}
	s := &scanner{b: body}
	haveTitle, haveBase := false, false
	for s.next() {
		if s.end {
			continue
		}
		name := string(s.name) // no allocation: compared, not kept
		if name == "title" {
			if !s.selfClosing && !haveTitle && len(s.text) > 0 {
				p.Title, haveTitle = clipTitle(rawTextValue(s.text), lim), true
			}
			continue
		}
		if !linkTags[name] {
			continue
		}
		switch name {
		case "base":
			if href := s.attr("href", "\x00"); href != "\x00" && !haveBase {
				ls.setBase(baseFor(pageURL, href))
				haveBase = true
			}
		case "meta":
			p.meta(s.attr("name", ""), s.attr("content", ""), lim.Agent)
			ls.element(name, s.attr)
		default:
			ls.element(name, s.attr)
		}
	}
	if p.NoFollow { // <meta name=robots content=nofollow> anywhere: no link is followed
		p.Links, p.Truncated = nil, false
	}
	return p
}

func hasToken(list, token string) bool {
	for _, t := range strings.Fields(strings.ToLower(list)) {
		if t == token {
			return true
		}
	}
	return false
}

// refreshTarget reads content="5; url=/next" (quotes and spaces optional).
func refreshTarget(content string) (string, bool) {
	_, rest, ok := strings.Cut(content, ";")
	if !ok {
		_, rest, ok = strings.Cut(content, ",")
	}
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if len(rest) < 4 || !strings.EqualFold(rest[:3], "url") {
		return "", false
	}
	rest = strings.TrimSpace(rest[3:])
	if !strings.HasPrefix(rest, "=") {
		return "", false
	}
	rest = strings.Trim(strings.TrimSpace(rest[1:]), `"'`)
	return rest, rest != ""
}
