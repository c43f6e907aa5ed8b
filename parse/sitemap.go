package parse

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Sitemap limits, from the sitemaps protocol (sitemaps.org): a file holds
// at most 50 000 URLs and 50 MB uncompressed.
const (
	MaxSitemapURLs  = 50_000
	MaxSitemapBytes = 50 << 20
)

// Sitemap is what a sitemap file lists: page URLs (a <urlset>) or other
// sitemaps (a <sitemapindex>), each as written in its <loc>.
type Sitemap struct {
	URLs, Sitemaps []string
	Truncated      bool // more entries than MaxSitemapURLs; the rest left out
}

// ParseSitemap reads a sitemap XML document (already decompressed), of
// at most MaxSitemapBytes.
func ParseSitemap(r io.Reader) (*Sitemap, error) {
	d := xml.NewDecoder(io.LimitReader(r, MaxSitemapBytes))
	d.Strict = false
	sm := &Sitemap{}
	var in string // "url" or "sitemap": the element whose <loc> is next
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
			switch t.Name.Local {
			case "url", "sitemap":
				in = t.Name.Local
			case "loc":
				var loc string
				if err := d.DecodeElement(&loc, &t); err != nil {
					continue
				}
				loc = strings.TrimSpace(loc)
				if loc == "" {
					continue
				}
				if len(sm.URLs)+len(sm.Sitemaps) >= MaxSitemapURLs {
					sm.Truncated = true
					return sm, nil
				}
				if in == "sitemap" {
					sm.Sitemaps = append(sm.Sitemaps, loc)
				} else {
					sm.URLs = append(sm.URLs, loc)
				}
			}
		}
	}
	return sm, nil
}
