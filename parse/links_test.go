package parse

import (
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestExtract(t *testing.T) {
	f, err := os.Open("../testdata/links.html")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page, _ := url.Parse("http://example.com/docs/page.html")
	p, err := Extract(page, f, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"http://example.com/docs/index.html",
		"http://example.com/docs/next.html",
		"http://example.com/docs/a.html",
		"http://example.com/top",
		"https://other.example/x",
		"http://example.com/docs/area.html",
		"http://example.com/docs/frame.html",
	}
	if !reflect.DeepEqual(p.Links, want) {
		t.Errorf("links:\n got %q\nwant %q", p.Links, want)
	}
	if p.Title != "Links fixture" || p.Canonical != "http://example.com/docs/index.html" || p.Dropped != 3 || p.NoFollow || p.Truncated {
		t.Errorf("page = %+v", p)
	}
}

func TestExtractMetaRobotsNofollowAndLimits(t *testing.T) {
	page, _ := url.Parse("http://example.com/")
	p, err := Extract(page, strings.NewReader(`<meta name="ROBOTS" content="noindex, nofollow"><a href="/x">x</a>`), Limits{})
	if err != nil || !p.NoFollow || len(p.Links) != 0 {
		t.Fatalf("meta robots nofollow: %+v %v", p, err)
	}
	var b strings.Builder
	b.WriteString("<title>" + strings.Repeat("long ", 1000) + "</title>")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, `<a href="/p%d">p</a>`, i)
	}
	p, err = Extract(page, strings.NewReader(b.String()), Limits{MaxLinks: 100})
	if err != nil || len(p.Links) != 100 || !p.Truncated || len(p.Title) > 512 {
		t.Fatalf("limits: %d links, truncated %v, title %d bytes, %v", len(p.Links), p.Truncated, len(p.Title), err)
	}
}

func TestRefreshTarget(t *testing.T) {
	for in, want := range map[string]string{
		"0; url=/next":          "/next",
		"5;URL='a.html'":        "a.html",
		`3; url = "b.html"`:     "b.html",
		"10":                    "",
		"0; foo=bar":            "",
		"0, url=http://x.test/": "http://x.test/",
	} {
		got, _ := refreshTarget(in)
		if got != want {
			t.Errorf("refreshTarget(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScope(t *testing.T) {
	seeds := []string{"docs.example.co.uk", "127.0.0.10:8080"}
	u := func(s string) *url.URL { x, _ := url.Parse(s); return x }
	host := NewScope(ScopeHost, seeds)
	domain := NewScope(ScopeDomain, seeds)
	for _, tc := range []struct {
		url          string
		host, domain bool
	}{
		{"http://docs.example.co.uk/x", true, true},
		{"http://www.example.co.uk/x", false, true},
		{"http://other.co.uk/", false, false},
		{"http://127.0.0.10:8080/a", true, true},
		{"http://127.0.0.10:8081/a", false, true},
	} {
		if got := host.Allows(u(tc.url)); got != tc.host {
			t.Errorf("host scope %s: %v", tc.url, got)
		}
		if got := domain.Allows(u(tc.url)); got != tc.domain {
			t.Errorf("domain scope %s: %v", tc.url, got)
		}
	}
	if !NewScope(ScopeAny, nil).Allows(u("http://anything.test/")) {
		t.Error("any scope refused")
	}
	if _, err := ParseScopeMode("planet"); err == nil {
		t.Error("bad scope accepted")
	}
}

func FuzzExtract(f *testing.F) {
	f.Add(`<a href="/a">a</a><base href="http://x.test/"><meta http-equiv=refresh content="0;url=/b">`)
	f.Add(`<a href="%zz"><area href="//[::1"><iframe src="javascript:x">`)
	page, _ := url.Parse("http://example.com/dir/")
	f.Fuzz(func(t *testing.T, html string) {
		p, err := Extract(page, strings.NewReader(html), Limits{MaxLinks: 50})
		if err != nil {
			return
		}
		if len(p.Links) > 50 {
			t.Fatalf("%d links over the limit", len(p.Links))
		}
		for _, l := range p.Links {
			if !strings.HasPrefix(l, "http://") && !strings.HasPrefix(l, "https://") {
				t.Fatalf("non-http link %q", l)
			}
		}
	})
}

// A page nested deeper than the tree builder accepts (512 open elements)
// still gives its title and links, through the tokenizer.
func TestDeeplyNestedPageStillGivesItsLinks(t *testing.T) {
	base, _ := url.Parse("http://h.example/deep")
	var b strings.Builder
	b.WriteString(`<html><head><title>Deep  page</title><base href="/b/"></head><body>`)
	b.WriteString(`<a href="top.html">top</a>`)
	for i := 0; i < 2000; i++ {
		b.WriteString("<div>")
	}
	b.WriteString(`<a href="bottom.html">bottom</a><a rel="nofollow" href="/no">no</a>`)
	p, err := Extract(base, strings.NewReader(b.String()), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://h.example/b/top.html", "http://h.example/b/bottom.html"}
	if !reflect.DeepEqual(p.Links, want) || p.Title != "Deep page" {
		t.Fatalf("links %v, title %q; want %v and the title", p.Links, p.Title, want)
	}
}

// The streaming path (no fields) finds what the document tree finds (the
// path fields take), on the fixture and on pages made to tell them apart:
// tags and attributes in capitals, repeated attributes, links in comments,
// scripts and noscript, entities in the title, a meta robots after the
// links, a canonical link, a refresh, an svg title after the real one.
func TestStreamingFindsWhatTheTreeFinds(t *testing.T) {
	fixture, err := os.ReadFile("../testdata/links.html")
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{
		string(fixture),
		`<HTML><HEAD><TITLE>Caps &amp; entities</TITLE></HEAD><BODY><A HREF="/a" href="/b">x</A><a rel="NOFOLLOW" href="/n">n</a></BODY>`,
		`<title>t</title><!-- <a href="/comment"> --><script>var s = '<a href="/script">';</script><noscript><a href="/noscript">x</a></noscript><a href="/real">r</a>`,
		`<title>first</title><svg><title>svg</title></svg><a href="/x#frag">x</a><a href="/x">again</a>`,
		`<a href="/before">b</a><meta name="robots" content="nofollow"><link rel="canonical" href="/canon">`,
		`<meta http-equiv="Refresh" content="0; URL='/moved'"><link rel="stylesheet canonical" href="/c"><iframe src="/frame"></iframe>`,
		`<head><base href="http://other.example/dir/"></head><a href="rel">r</a><area href="mailto:x@y"><a href="javascript:void(0)">j</a>`,
	}
	field, err := CompileField("any", "title")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := url.Parse("http://example.com/docs/page.html")
	for i, html := range pages {
		stream, err1 := Extract(page, strings.NewReader(html), Limits{})
		tree, err2 := Extract(page, strings.NewReader(html), Limits{}, field)
		if err1 != nil || err2 != nil {
			t.Fatalf("page %d: %v, %v", i, err1, err2)
		}
		tree.Fields = nil
		if !reflect.DeepEqual(stream, tree) {
			t.Errorf("page %d:\nstream %+v\n  tree %+v", i, stream, tree)
		}
	}
}
