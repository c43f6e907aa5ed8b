package parse

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseSitemap(t *testing.T) {
	urlset := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc> https://a.example/one </loc><lastmod>2026-01-01</lastmod></url>
  <url><loc>https://a.example/two?x=1&amp;y=2</loc></url>
</urlset>`
	sm, err := ParseSitemap(strings.NewReader(urlset))
	if err != nil || !reflect.DeepEqual(sm.URLs, []string{"https://a.example/one", "https://a.example/two?x=1&y=2"}) || len(sm.Sitemaps) != 0 {
		t.Fatalf("urlset: %+v, %v", sm, err)
	}
	index := `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>https://a.example/s1.xml.gz</loc></sitemap><sitemap><loc>https://a.example/s2.xml</loc></sitemap>
</sitemapindex>`
	sm, err = ParseSitemap(strings.NewReader(index))
	if err != nil || !reflect.DeepEqual(sm.Sitemaps, []string{"https://a.example/s1.xml.gz", "https://a.example/s2.xml"}) || len(sm.URLs) != 0 {
		t.Fatalf("index: %+v, %v", sm, err)
	}
	var b strings.Builder
	b.WriteString("<urlset>")
	for i := 0; i < MaxSitemapURLs+10; i++ {
		b.WriteString("<url><loc>https://a.example/p</loc></url>")
	}
	sm, err = ParseSitemap(strings.NewReader(b.String()))
	if err != nil || len(sm.URLs) != MaxSitemapURLs || !sm.Truncated {
		t.Fatalf("oversized: %d URLs, truncated %v, %v", len(sm.URLs), sm.Truncated, err)
	}
	if sm, err := ParseSitemap(strings.NewReader("not xml at all <<<")); err == nil && len(sm.URLs)+len(sm.Sitemaps) > 0 {
		t.Fatalf("a non-XML body gave %+v", sm)
	}
}
