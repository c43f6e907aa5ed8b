package parse

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/net/html/charset"
)

// Sitemap limits, from the sitemaps protocol (sitemaps.org): a file holds
// at most 50 000 URLs and 50 MB uncompressed.
const (
	MaxSitemapURLs  = 50_000
	MaxSitemapBytes = 50 << 20
)

// sitemapNS is the sitemaps protocol's XML namespace.
const sitemapNS = "http://www.sitemaps.org/schemas/sitemap/0.9"

// Sitemap is what a sitemap file lists: page URLs (a <urlset>, a text
// sitemap, an RSS or Atom feed) or other sitemaps (a <sitemapindex>), each
// as written.
type Sitemap struct {
	URLs, Sitemaps []string
	// Priorities are the URLs' <priority> (0.0 to 1.0), by place in URLs;
	// -1 where none was given (sitemaps.org: 0.5 then). Nil when the file
	// gave none.
	Priorities []float64
	Truncated  bool // more entries than MaxSitemapURLs; the rest left out
}

// Priority is the priority URLs[i] was given, or 0.5 (the protocol's
// default) when none or one out of range was.
func (sm *Sitemap) Priority(i int) float64 {
	if i < len(sm.Priorities) && sm.Priorities[i] >= 0 && sm.Priorities[i] <= 1 {
		return sm.Priorities[i]
	}
	return 0.5
}

// setPriority gives URLs[i] priority p.
func (sm *Sitemap) setPriority(i int, p float64) {
	if i < 0 || i >= len(sm.URLs) {
		return
	}
	for len(sm.Priorities) < len(sm.URLs) {
		sm.Priorities = append(sm.Priorities, -1)
	}
	sm.Priorities[i] = p
}

// add keeps loc (an index's sitemap when index), and reports whether
// there is room for more.
func (sm *Sitemap) add(loc string, index bool) bool {
	loc = strings.TrimSpace(loc)
	if loc == "" {
		return true
	}
	if len(sm.URLs)+len(sm.Sitemaps) >= MaxSitemapURLs {
		sm.Truncated = true
		return false
	}
	if index {
		sm.Sitemaps = append(sm.Sitemaps, loc)
	} else {
		sm.URLs = append(sm.URLs, loc)
	}
	return true
}

// ParseSitemap reads a sitemap (already decompressed), of at most
// MaxSitemapBytes, in any of the protocol's formats: XML (a <urlset> or a
// <sitemapindex>, in any encoding its declaration names; only the
// protocol's own <loc> of a <url> or <sitemap> counts, not an image's or
// one astray), a text file of one URL a line, or an RSS 2.0 or Atom feed
// (each item's link).
func ParseSitemap(r io.Reader) (*Sitemap, error) {
	br := bufio.NewReader(io.LimitReader(r, MaxSitemapBytes))
	head, _ := br.Peek(512)
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xEF\xBB\xBF")), " \t\r\n")
	if len(head) > 0 && head[0] != '<' {
		return textSitemap(br)
	}
	d := xml.NewDecoder(br)
	d.Strict = false
	d.CharsetReader = charset.NewReaderLabel
	sm := &Sitemap{}
	var path []xml.Name // the open elements
	// A <url>'s <priority> may come before its <loc> or after it.
	at, pending := -1, -1.0 // the current <url>'s place in URLs (-1: no <loc> yet), and its priority read before it
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if len(sm.URLs)+len(sm.Sitemaps) > 0 {
				sm.Truncated = true // keep what was read before the damage
				break
			}
			return nil, fmt.Errorf("parse: sitemap: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			parent := ""
			if len(path) > 0 && inSitemapNS(path[len(path)-1]) {
				parent = path[len(path)-1].Local
			}
			switch {
			case t.Name.Local == "url" && inSitemapNS(t.Name):
				at, pending = -1, -1
			case t.Name.Local == "loc" && inSitemapNS(t.Name) && (parent == "url" || parent == "sitemap"):
				var loc string
				n := len(sm.URLs)
				if d.DecodeElement(&loc, &t) == nil && !sm.add(loc, parent == "sitemap") {
					return sm, nil
				}
				if parent == "url" && len(sm.URLs) > n {
					at = n
					if pending >= 0 {
						sm.setPriority(at, pending)
					}
				}
				continue // DecodeElement read its end
			case t.Name.Local == "priority" && inSitemapNS(t.Name) && parent == "url":
				var v string
				if d.DecodeElement(&v, &t) == nil {
					if p, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && p >= 0 && p <= 1 {
						pending = p
						sm.setPriority(at, p)
					}
				}
				continue
			case t.Name.Local == "link" && parent == "item" && t.Name.Space == "": // RSS 2.0
				var link string
				if d.DecodeElement(&link, &t) == nil && !sm.add(link, false) {
					return sm, nil
				}
				continue
			case t.Name.Local == "link" && len(path) > 0 && path[len(path)-1].Local == "entry": // Atom
				if rel := attr(t, "rel"); (rel == "" || rel == "alternate") && !sm.add(attr(t, "href"), false) {
					return sm, nil
				}
			}
			path = append(path, t.Name)
		case xml.EndElement:
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
		}
	}
	return sm, nil
}

// inSitemapNS: an element of the protocol (its namespace, or none, as
// many sitemaps are written).
func inSitemapNS(n xml.Name) bool { return n.Space == "" || n.Space == sitemapNS }

func attr(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// textSitemap reads a text sitemap: one full URL a line (UTF-8).
func textSitemap(r *bufio.Reader) (*Sitemap, error) {
	sm := &Sitemap{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxURLLength+2)
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\xEF\xBB\xBF"))
		if l := strings.ToLower(line); !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
			continue // a text sitemap is full URLs; a line that is none (an error page's) is no entry
		}
		if !sm.add(line, false) {
			return sm, nil
		}
	}
	if err := sc.Err(); err != nil {
		if len(sm.URLs) == 0 {
			return nil, fmt.Errorf("parse: text sitemap: %w", err)
		}
		sm.Truncated = true
	}
	return sm, nil
}
