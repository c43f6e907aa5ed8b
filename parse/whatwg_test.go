package parse

import (
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"
)

// whatwgCase is one entry of the WHATWG URL standard's parsing tests
// (web-platform-tests url/resources/urltestdata.json; testdata/whatwg has
// the copy and its licence).
type whatwgCase struct {
	Input   string  `json:"input"`
	Base    *string `json:"base"`
	Href    string  `json:"href"`
	Failure bool    `json:"failure"`
}

func whatwgCases(t *testing.T) []whatwgCase {
	t.Helper()
	raw, err := os.ReadFile("../testdata/whatwg/urltestdata.json")
	if err != nil {
		t.Fatal(err)
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatal(err)
	}
	var out []whatwgCase
	for _, e := range entries {
		var c whatwgCase
		if json.Unmarshal(e, &c) == nil { // the strings between are comments
			out = append(out, c)
		}
	}
	return out
}

func special(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

// The cases the standard accepts with an http(s) result: the crawler must
// resolve the input to the URL a browser does, as the crawler spells it
// (Canonicalize of the standard's answer: its normalizations on top).
// Each case it answers otherwise is listed in whatwgKept, with why.
func TestWHATWGAcceptedURLs(t *testing.T) {
	pass, total := 0, 0
	for _, c := range whatwgCases(t) {
		if c.Failure || !special(c.Href) {
			continue
		}
		total++
		var base *url.URL
		if c.Base != nil {
			var err error
			if base, err = Canonicalize(nil, *c.Base); err != nil {
				base, _ = url.Parse(*c.Base)
			}
		}
		want, werr := CanonicalString(c.Href)
		got, gerr := Canonicalize(base, c.Input)
		ok := werr == nil && gerr == nil && got.String() == want
		if ok {
			pass++
			continue
		}
		if why, kept := whatwgKept[c.Input]; kept {
			t.Logf("kept: %q: %s", c.Input, why)
			continue
		}
		t.Errorf("%q against %v: got %v (%v); a browser: %q, as the crawler spells it %q (%v)", c.Input, ptr(c.Base), got, gerr, c.Href, want, werr)
	}
	t.Logf("accepted http(s) cases: %d of %d as a browser resolves them", pass, total)
}

// The cases the standard refuses whose input or base is http(s): the
// crawler must refuse them too (a URL a browser cannot load is no page).
func TestWHATWGRefusedURLs(t *testing.T) {
	pass, total := 0, 0
	for _, c := range whatwgCases(t) {
		if !c.Failure || !(special(c.Input) || c.Base != nil && special(*c.Base)) {
			continue
		}
		total++
		var base *url.URL
		if c.Base != nil {
			base, _ = url.Parse(*c.Base)
		}
		got, err := Canonicalize(base, c.Input)
		if err != nil {
			pass++
			continue
		}
		if why, kept := whatwgKept[c.Input]; kept {
			t.Logf("kept: %q: %s", c.Input, why)
			continue
		}
		t.Errorf("%q against %v: accepted as %v; the standard refuses it", c.Input, ptr(c.Base), got)
	}
	t.Logf("refused http(s) cases: %d of %d refused", pass, total)
}

func ptr(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}

// whatwgKept are the deviations kept on purpose, input -> why.
var whatwgKept = map[string]string{
	"http://f:0/c":                 "port 0 is no port a server listens on: refused, not fetched",
	"http://f:00000000000000/c":    "port 0, spelled long: refused as port 0 is",
	"":                             "an empty link is the page itself, fetched already: refused, not counted as a link",
	"  \t":                         "the same, in white space",
	"http://./":                    "a host of empty labels resolves nowhere: refused rather than looked up",
	"http://../":                   "the same",
	"http://foo.09..":              "the same (an empty label)",
	"http://!\"$&'()*+,-.;=_`{}~/": "no DNS name has these characters (IDNA refuses them): refused rather than looked up",
}

// FuzzPlainRefsResolveAsTheStandard: the links resolve takes net/url's
// path for (plainRef, plainAbsolute) come out exactly as the standard's
// parser makes them, canonicalized alike. Its seeds are the standard's
// inputs and links of every common shape.
func FuzzPlainRefsResolveAsTheStandard(f *testing.F) {
	for _, s := range []string{"page.html", "../a/b?c=d&e=f", "/x/y/z", "?q=1", "#frag", "a/./b/../c", "http://example.com/a",
		"https://sub.example.org/p?q=a+b", "http://example.com/%7Euser", "http://example.com/a%2Fb", "/a;b=c", "http://a.b.c-d.example/",
		"mailto:a@b.c", "http://0x7f.1/", "http://example.com./", "http://1.2.3/", "foo@bar", "*", "!$()"} {
		f.Add(s)
	}
	raw, err := os.ReadFile("../testdata/whatwg/urltestdata.json")
	if err == nil {
		var entries []whatwgCase
		json.Unmarshal(raw, &entries) // the comment strings fail to decode; the objects do
		for _, c := range entries {
			f.Add(c.Input)
		}
	}
	base, _ := url.Parse("http://example.com/a/b/c.html?x=1")
	dots, _ := url.Parse("http://example.com/a/b/..") // the standard's directory is /a/, net/url's /a/b/
	f.Fuzz(func(t *testing.T, ref string) {
		for _, b := range []*url.URL{nil, base, dots} {
			if !(plainAbsolute(ref) || b != nil && plainRef(ref)) {
				continue
			}
			fast, ferr := canonicalize(resolve, b, ref, false)
			slow, serr := canonicalize(resolveWHATWG, b, ref, false)
			if (ferr == nil) != (serr == nil) || ferr == nil && fast.String() != slow.String() {
				t.Fatalf("%q against %v: plain path %v (%v), the standard %v (%v)", ref, b, fast, ferr, slow, serr)
			}
		}
	})
}
