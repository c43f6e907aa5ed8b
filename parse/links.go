package parse

import (
	"io"
	"net/url"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// Limits bound what one page may cost; a hostile page cannot exceed them.
type Limits struct {
	MaxLinks int // links kept per page (default 1000); Page.Truncated tells
	MaxTitle int // bytes of title kept (default 512)
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
	// NoFollow is set by <meta name="robots" content="nofollow|none">.
	NoFollow bool
	// Truncated is set when the page had more links than Limits.MaxLinks.
	Truncated bool
	// Dropped counts hrefs that were not usable URLs (bad syntax, mailto:, …).
	Dropped int
	// Fields are the text of the fields asked for, by name.
	Fields map[string]string
}

// Extract parses an HTML document fetched from pageURL and returns its title
// and links: a[href], area[href], iframe[src], frame[src],
// link[rel=canonical], and the target of <meta http-equiv="refresh">
// (a refresh page is a redirect, not a dead end), all resolved against
// <base href> when the page has one; and the text of each field's first
// match.
func Extract(pageURL *url.URL, body io.Reader, lim Limits, fs ...Field) (*Page, error) {
	lim = lim.withDefaults()
	doc, err := goquery.NewDocumentFromReader(body)
	if err != nil {
		return nil, err
	}
	base := pageURL
	if href, ok := doc.Find("base[href]").First().Attr("href"); ok {
		if b, err := pageURL.Parse(strings.TrimSpace(href)); err == nil && (b.Scheme == "http" || b.Scheme == "https") {
			base = b
		}
	}
	p := &Page{Fields: fields(doc, fs)}
	title := strings.Join(strings.Fields(doc.Find("title").First().Text()), " ")
	if len(title) > lim.MaxTitle {
		title = strings.ToValidUTF8(title[:lim.MaxTitle], "")
	}
	p.Title = title

	doc.Find("meta[name]").Each(func(_ int, s *goquery.Selection) {
		name, _ := s.Attr("name")
		if !strings.EqualFold(strings.TrimSpace(name), "robots") {
			return
		}
		content, _ := s.Attr("content")
		for _, d := range strings.FieldsFunc(strings.ToLower(content), func(r rune) bool { return r == ',' || r == ' ' }) {
			if d == "nofollow" || d == "none" {
				p.NoFollow = true
			}
		}
	})

	seen := map[string]bool{}
	add := func(ref string) {
		if p.NoFollow {
			return
		}
		u, err := Canonicalize(base, ref)
		if err != nil {
			p.Dropped++
			return
		}
		s := u.String()
		if seen[s] {
			return
		}
		if len(p.Links) >= lim.MaxLinks {
			p.Truncated = true
			return
		}
		seen[s] = true
		p.Links = append(p.Links, s)
	}

	doc.Find("a[href], area[href], iframe[src], frame[src], link[rel][href], meta[http-equiv][content]").Each(func(_ int, s *goquery.Selection) {
		switch goquery.NodeName(s) {
		case "a", "area":
			if hasToken(s.AttrOr("rel", ""), "nofollow") {
				return
			}
			add(s.AttrOr("href", ""))
		case "iframe", "frame":
			add(s.AttrOr("src", ""))
		case "link":
			if hasToken(s.AttrOr("rel", ""), "canonical") {
				href := s.AttrOr("href", "")
				if u, err := Canonicalize(base, href); err == nil && p.Canonical == "" {
					p.Canonical = u.String()
				}
				add(href)
			}
		case "meta":
			if strings.EqualFold(strings.TrimSpace(s.AttrOr("http-equiv", "")), "refresh") {
				if target, ok := refreshTarget(s.AttrOr("content", "")); ok {
					add(target)
				}
			}
		}
	})
	return p, nil
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
