package parse

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// HeadOf reads the head's robots meta tags alone, this crawler's and
// every crawler's, its first canonical link and its base, and stops at the
// body.
func TestHeadOf(t *testing.T) {
	for body, want := range map[string]string{
		`<html><head><meta name="robots" content="noarchive"></head><body>x</body></html>`:                 "[noarchive] ",
		`<meta name=redcrawl content="noindex,noarchive"><meta name=otherbot content=nofollow>`:            "[noindex noarchive] ",
		`<html><head><title>t</title></head><body><meta name="robots" content="noarchive"></body></html>`:  "[] ",
		`<html><head><meta name="description" content="noarchive"></head></html>`:                          "[] ",
		`<head><link rel="Canonical" href="/a"><link rel=canonical href=/b><base href="http://x.test/d/">`: "[] /a http://x.test/d/",
		`<head><link rel="alternate canonical" HREF="/a?x=1"></head>`:                                      "[] /a?x=1",
		`<head></head><body><link rel=canonical href=/late></body>`:                                        "[] ",
		`<link rel=stylesheet href=/s.css><link rel=canonical>`:                                            "[] ",
		``: "[] ",
	} {
		h := HeadOf([]byte(body), "redcrawl")
		if got := strings.TrimSpace(fmt.Sprintf("%v %s %s", h.Robots.Words(), h.Canonical, h.Base)); got != strings.TrimSpace(want) {
			t.Errorf("%s: %q; want %q", body, got, want)
		}
	}
}

// The canonical a response declares: the Link header's first, else the
// head's, resolved against its base, canonicalized; nothing for what is no
// http(s) URL.
func TestCanonicalOf(t *testing.T) {
	page, _ := url.Parse("http://site.test/dir/page?sid=9&b=2&a=1")
	for _, c := range []struct {
		links []string
		head  Head
		want  string
	}{
		{nil, Head{Canonical: "/dir/page?b=2&a=1"}, "http://site.test/dir/page?b=2&a=1"},
		{nil, Head{Canonical: " other "}, "http://site.test/dir/other"},
		{nil, Head{Canonical: "other", Base: "http://site.test/base/"}, "http://site.test/base/other"},
		{nil, Head{Canonical: "other", Base: "javascript:x"}, "http://site.test/dir/other"},
		{[]string{`<http://SITE.test:80/x>; rel="canonical"`}, Head{Canonical: "/y"}, "http://site.test/x"},
		{[]string{`</next>; rel=next`}, Head{Canonical: "/y"}, "http://site.test/y"},
		{[]string{`<mailto:a@b>; rel=canonical`}, Head{Canonical: "/y"}, "http://site.test/y"},
		{nil, Head{Canonical: "ftp://site.test/z"}, ""},
		{nil, Head{}, ""},
	} {
		got := ""
		if u := CanonicalOf(page, c.links, c.head, false); u != nil {
			got = u.String()
		}
		if got != c.want {
			t.Errorf("CanonicalOf(%q, %+v) = %q; want %q", c.links, c.head, got, c.want)
		}
	}
}

// Link headers as servers send them: several values, several links a
// value, rel lists, quoted and bare values, commas and semicolons inside
// targets and quotes, and links that do not parse among ones that do.
func TestLinkTargets(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   string
	}{
		{[]string{`<https://a.test/x>; rel="canonical"`}, "https://a.test/x"},
		{[]string{`<https://a.test/x>; rel=canonical`}, "https://a.test/x"},
		{[]string{`<https://a.test/x>;rel="alternate CANONICAL";type="text/html"`}, "https://a.test/x"},
		{[]string{`</p,1>; rel="next", </c;2>; title="a, b; c"; rel=canonical`}, "/c;2"},
		{[]string{`</n>; rel=next`, `</c>; rel=canonical`}, "/c"},
		{[]string{`</a>; rel=canonical, </b>; rel=canonical`}, "/a /b"},
		{[]string{`</a>; rel=next; rel=canonical`}, ""}, // the first rel counts
		{[]string{`garbage "x, y", </c>; rel=canonical`}, "/c"},
		{[]string{`</a; rel=canonical`}, ""},
		{[]string{`</a>; rel="canonical`}, "/a"},
		{[]string{`</a> x; rel=canonical, </b>; rel=canonical`}, "/b"},
		{[]string{`</a>; title="\"q\"; rel=canonical"`}, ""},
		{[]string{``, `,,`, ` ; `}, ""},
	} {
		if got := strings.Join(LinkTargets(c.values, "canonical"), " "); got != c.want {
			t.Errorf("LinkTargets(%q) = %q; want %q", c.values, got, c.want)
		}
	}
}

// Whatever a server sends, LinkTargets ends, and finds a well-formed
// canonical link placed among any others.
func TestLinkTargetsOfAnyHeader(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		junk := rapid.StringOfN(rapid.SampledFrom([]rune(`<>;,="\ abrelcanonical`)), 0, 40, -1).Draw(rt, "junk")
		LinkTargets([]string{junk}, "canonical") // ends, and does not panic
		before := rapid.SampledFrom([]string{"", `</n>; rel=next, `, `</m>; rel="x y", `}).Draw(rt, "before")
		after := rapid.SampledFrom([]string{"", `, </n>; rel=next`, `, </c2>; rel=canonical`}).Draw(rt, "after")
		got := LinkTargets([]string{before + `</c>; rel="canonical"` + after}, "canonical")
		if len(got) == 0 || got[0] != "/c" {
			rt.Fatalf("%q", got)
		}
	})
}
