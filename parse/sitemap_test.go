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

// The sitemaps.org formats and rules beyond the plain <urlset> (issue 19):
// each failed before.
func TestParseSitemapFormats(t *testing.T) {
	for _, c := range []struct {
		name, body string
		urls       []string
	}{
		{"text", "\xEF\xBB\xBFhttps://a.example/one\n\nhttps://a.example/two\r\nnot a URL\n", []string{"https://a.example/one", "https://a.example/two"}},
		{"rss", `<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><link>https://a.example/</link>
			<item><title>x</title><link>https://a.example/post/1</link></item><item><link>https://a.example/post/2</link></item></channel></rss>`,
			[]string{"https://a.example/post/1", "https://a.example/post/2"}},
		{"atom", `<feed xmlns="http://www.w3.org/2005/Atom"><link href="https://a.example/"/>
			<entry><link href="https://a.example/e/1"/><link rel="edit" href="https://a.example/edit/1"/></entry>
			<entry><link rel="alternate" href="https://a.example/e/2"/></entry></feed>`,
			[]string{"https://a.example/e/1", "https://a.example/e/2"}},
		{"image namespace", `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
			<url><loc>https://a.example/page</loc><image:image><image:loc>https://a.example/images/photo.jpg</image:loc></image:image></url></urlset>`,
			[]string{"https://a.example/page"}},
		{"stray loc", `<urlset><loc>https://a.example/stray</loc><url><loc>https://a.example/page</loc></url></urlset>`,
			[]string{"https://a.example/page"}},
		{"latin-1", "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><urlset><url><loc>https://a.example/caf\xe9</loc></url></urlset>",
			[]string{"https://a.example/café"}},
	} {
		sm, err := ParseSitemap(strings.NewReader(c.body))
		if err != nil || !reflect.DeepEqual(sm.URLs, c.urls) {
			t.Errorf("%s: %+v, %v; want %v", c.name, sm, err, c.urls)
		}
	}
}

// A <url>'s <priority> is read whether it comes before its <loc> or
// after it; one out of range, unreadable or absent reads as the
// protocol's default, 0.5; a sitemap index's entries have none.
func TestSitemapPriorities(t *testing.T) {
	sm, err := ParseSitemap(strings.NewReader(`<?xml version="1.0"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://a/1</loc><priority>0.9</priority></url>
  <url><priority>0.1</priority><loc>https://a/2</loc></url>
  <url><loc>https://a/3</loc></url>
  <url><loc>https://a/4</loc><priority>1.5</priority></url>
  <url><loc>https://a/5</loc><priority>high</priority></url>
  <url><loc>https://a/6</loc><priority> 1.0 </priority></url>
</urlset>`))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.9, 0.1, 0.5, 0.5, 0.5, 1}
	if len(sm.URLs) != len(want) {
		t.Fatalf("URLs %v", sm.URLs)
	}
	for i, p := range want {
		if got := sm.Priority(i); got != p {
			t.Errorf("%s: priority %v; want %v", sm.URLs[i], got, p)
		}
	}
	plain, err := ParseSitemap(strings.NewReader("https://a/1\nhttps://a/2\n"))
	if err != nil || plain.Priority(1) != 0.5 || plain.Priorities != nil {
		t.Fatalf("a text sitemap: %v, %v", plain, err)
	}
}
