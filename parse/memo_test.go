package parse

import (
	"errors"
	"net/url"
	"testing"

	"pgregory.net/rapid"
)

// A memo answers as canonicalization does: for any pages met in any order,
// each link's canonical form (or its refusal) through a shared memo, small
// enough to be evicting, is the one CanonicalizeKeeping gives on that page.
func TestAMemoAnswersAsCanonicalization(t *testing.T) {
	hosts := []string{"http://a.example", "https://a.example", "http://b.example:8080", "http://xn--bcher-kva.example", "http://127.0.0.1"}
	dirs := []string{"", "/", "/docs/", "/docs/a/", "/docs/a/b/", "/x%20y/"}
	lasts := []string{"", "index.html", "page.html", "p", ".."}
	queries := []string{"", "?", "?q=1", "?a=1&utm_source=x"}
	frags := []string{"", "#top"}
	parts := []string{"", ".", "..", "x.html", "a/", "b", "?", "#", "/", "//", "q=1", "&", "utm_source=z", "%41", "%zz", " ", "\t", "\n",
		"http:", "https:", "//a.example", "mailto:", "javascript:", "HTTP://A.EXAMPLE", "\\", ":", "é", "@", "http://b.example:8080/", "#a", "#b"}
	leads := []string{"", "?", "#", "/", "..", "x.html", " ", "http://b.example:8080/", "HTTP:", "//"}
	rapid.Check(t, func(t *rapid.T) {
		// A few pages and links, met in any order: a link met again on
		// another page, in its directory or not.
		// Two hosts and two directories: pages share them often.
		hs := []string{rapid.SampledFrom(hosts).Draw(t, "host"), rapid.SampledFrom(hosts).Draw(t, "host")}
		ds := []string{rapid.SampledFrom(dirs).Draw(t, "dir"), rapid.SampledFrom(dirs).Draw(t, "dir")}
		var bases []*url.URL
		for i, n := 0, rapid.IntRange(1, 5).Draw(t, "pages"); i < n; i++ {
			raw := rapid.SampledFrom(hs).Draw(t, "host") + rapid.SampledFrom(ds).Draw(t, "dir")
			if raw[len(raw)-1] == '/' {
				raw += rapid.SampledFrom(lasts).Draw(t, "last")
			}
			raw += rapid.SampledFrom(queries).Draw(t, "query") + rapid.SampledFrom(frags).Draw(t, "frag")
			base, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("base %q: %v", raw, err)
			}
			bases = append(bases, base)
		}
		var refs []string
		for i, n := 0, rapid.IntRange(1, 4).Draw(t, "links"); i < n; i++ {
			ref := rapid.SampledFrom(leads).Draw(t, "lead")
			for j, k := 0, rapid.IntRange(0, 3).Draw(t, "parts"); j < k; j++ {
				ref += rapid.SampledFrom(parts).Draw(t, "part")
			}
			refs = append(refs, ref)
		}
		m := NewMemo(rapid.IntRange(1, 8).Draw(t, "size"))
		for i, n := 0, rapid.IntRange(1, 50).Draw(t, "visits"); i < n; i++ {
			base, ref := rapid.SampledFrom(bases).Draw(t, "page"), rapid.SampledFrom(refs).Draw(t, "link")
			keep := rapid.Bool().Draw(t, "keep")
			var ks baseKeys
			got, gerr := m.canonical(base, &ks, ref, keep)
			want, werr := CanonicalizeKeeping(base, ref, keep)
			switch {
			case (gerr == nil) != (werr == nil):
				t.Fatalf("%q on %s: memo %q, %v; canonicalize %v, %v", ref, base, got, gerr, want, werr)
			case werr == nil && got != want.String():
				t.Fatalf("%q on %s: memo %q, canonicalize %q", ref, base, got, want)
			case werr != nil && !errors.Is(gerr, ErrURL) && !errors.Is(gerr, ErrScheme):
				t.Fatalf("%q on %s: memo's error %v is neither ErrURL nor ErrScheme", ref, base, gerr)
			}
			if l := m.Len(); l > 2*m.size {
				t.Fatalf("memo of size %d holds %d", m.size, l)
			}
		}
	})
}

// One link on the pages of one directory is resolved once.
func TestAMemoResolvesALinkOncePerDirectory(t *testing.T) {
	m := NewMemo(100)
	for _, page := range []string{"http://a.example/docs/a.html", "http://a.example/docs/b.html?x=1", "http://a.example/docs/"} {
		base, _ := url.Parse(page)
		var ks baseKeys
		for _, ref := range []string{"../index.html", "c.html", "https://b.example/"} {
			if _, err := m.canonical(base, &ks, ref, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m.Len() != 3 {
		t.Fatalf("memo holds %d entries for 3 links on 3 pages of one directory, want 3", m.Len())
	}
}
