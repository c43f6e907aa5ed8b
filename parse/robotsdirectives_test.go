package parse

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// X-Robots-Tag as site owners write it: one header or several, comma
// lists, any case, directives addressed to this crawler or to none (those
// to another crawler are not its), unavailable_after's date in the forms
// Google names, words not known skipped.
func TestXRobotsTag(t *testing.T) {
	at := time.Date(2030, 6, 25, 15, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		values []string
		want   string
	}{
		{nil, ""},
		{[]string{"nofollow"}, "nofollow"},
		{[]string{"NoIndex, NOFOLLOW"}, "noindex nofollow"},
		{[]string{"none"}, "noindex nofollow"},
		{[]string{"noarchive", "nosnippet"}, "noarchive nosnippet"},
		{[]string{"redcrawl: nofollow"}, "nofollow"},
		{[]string{"RedCrawl: noindex, noarchive"}, "noindex noarchive"},
		{[]string{"googlebot: nofollow"}, ""},
		{[]string{"googlebot: noindex", "noarchive"}, "noarchive"},
		{[]string{"otherbot: none", "redcrawl: nosnippet"}, "nosnippet"},
		{[]string{"max-snippet: 20, noindex"}, "noindex"},
		{[]string{"all"}, ""},
		{[]string{"noindex nofollow"}, "noindex nofollow"},
		{[]string{"unavailable_after: 25 Jun 2030 15:00:00 GMT"}, "unavailable_after=" + at.Format(time.RFC3339)},
		{[]string{"unavailable_after: Tuesday, 25-Jun-30 15:00:00 GMT, noindex"}, "noindex unavailable_after=" + at.Format(time.RFC3339)},
		{[]string{"noindex, unavailable_after: 2030-06-25T15:00:00Z"}, "noindex unavailable_after=" + at.Format(time.RFC3339)},
		{[]string{"unavailable_after: someday"}, ""},
		{[]string{"nocache"}, "noarchive"},
		{[]string{"bogus, , nofollow,"}, "nofollow"},
	} {
		got := strings.Join(XRobotsTag(c.values, "redcrawl").Words(), " ")
		if got != c.want {
			t.Errorf("X-Robots-Tag %q: %q; want %q", c.values, got, c.want)
		}
	}
}

// A robots meta tag: name robots or the crawler's own, never another's.
func TestMetaRobots(t *testing.T) {
	for _, c := range []struct {
		name, content string
		want          string
		ok            bool
	}{
		{"robots", "nofollow", "nofollow", true},
		{"ROBOTS", "noindex,noarchive", "noindex noarchive", true},
		{"redcrawl", "none", "noindex nofollow", true},
		{"googlebot", "none", "", false},
		{"description", "nofollow", "", false},
	} {
		r, ok := metaRobots(c.name, c.content, "redcrawl")
		if got := strings.Join(r.Words(), " "); got != c.want || ok != c.ok {
			t.Errorf("<meta name=%q content=%q>: %q, %v; want %q, %v", c.name, c.content, got, ok, c.want, c.ok)
		}
	}
}

// Any list of known directives, in any case, with any separators, reads
// as the set of them; a list addressed to another crawler reads as
// nothing; directives said in several headers add up.
func TestDirectivesReadAsTheirSet(t *testing.T) {
	words := []string{"noindex", "nofollow", "noarchive", "nosnippet", "all", "index", "follow", "notranslate"}
	rapid.Check(t, func(rt *rapid.T) {
		var parts []string
		want := map[string]bool{}
		for range rapid.IntRange(0, 6).Draw(rt, "n") {
			w := rapid.SampledFrom(words).Draw(rt, "word")
			if rapid.Bool().Draw(rt, "upper") {
				parts = append(parts, strings.ToUpper(w))
			} else {
				parts = append(parts, w)
			}
			switch w {
			case "noindex", "nofollow", "noarchive", "nosnippet":
				want[w] = true
			}
		}
		sep := rapid.SampledFrom([]string{",", ", ", " ", " , "}).Draw(rt, "sep")
		list := strings.Join(parts, sep)
		got := map[string]bool{}
		for _, w := range Directives(list).Words() {
			got[w] = true
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			rt.Fatalf("%q: %v; want %v", list, got, want)
		}
		if other := XRobotsTag([]string{"otherbot: " + list}, "redcrawl"); len(other.Words()) != 0 {
			rt.Fatalf("addressed to another crawler, %q read as %v", list, other.Words())
		}
		split := XRobotsTag(parts, "redcrawl")
		if len(parts) > 0 && fmt.Sprint(split.Words()) != fmt.Sprint(Directives(list).Words()) {
			rt.Fatalf("one header a word: %v; one list: %v", split.Words(), Directives(list).Words())
		}
	})
}
