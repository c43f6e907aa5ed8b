package parse

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// Extract rules: a match's text, its attribute, and every match's, as
// users of colly (e.Attr, ForEach) and Scrapy (::attr(), getall) expect;
// a selector's own '@' is not read as an attribute, and a rule that is
// not one says what it should be.
func TestExtractRulesTakeTextAttributesAndEveryMatch(t *testing.T) {
	page := `<html><head><meta name="description" content=" A page "></head><body>
<a href="/one" class=nav>One</a> <a href="/two">Two</a> <a href="mailto:x@y.example">Mail</a> <a>no href</a>
<p>para   one</p><p>para two</p></body></html>`
	base, _ := url.Parse("http://a.example/")
	var fs []Field
	for _, rule := range []string{"first=a", "link=a[href]@href", "links[]=a[href]@href", "texts[]=p", "desc=meta[name=description]@content",
		`mail=a[href^="mailto:"]`, `at[]=a[href*="@"]@href`, "none=table", "none_attr=p@href"} {
		f, err := ParseField(rule)
		if err != nil {
			t.Fatalf("%s: %v", rule, err)
		}
		fs = append(fs, f)
	}
	p, err := Extract(base, strings.NewReader(page), Limits{}, fs...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"first": "One", "link": "/one", "links": []string{"/one", "/two", "mailto:x@y.example"},
		"texts": []string{"para one", "para two"}, "desc": "A page", "mail": "Mail", "at": []string{"mailto:x@y.example"}}
	if !reflect.DeepEqual(p.Fields, want) {
		t.Errorf("fields %v\nwant   %v", p.Fields, want)
	}
	for _, bad := range []string{"noequals", "=a", "bad name=a", "x=a[", "x[]=@href"} {
		if _, err := ParseField(bad); err == nil {
			t.Errorf("ParseField(%q) took it", bad)
		}
	}
	many := strings.Repeat("<i>x</i>", 500)
	f, _ := ParseField("all[]=i")
	p, _ = Extract(base, strings.NewReader(many), Limits{}, f)
	if n := len(p.Fields["all"].([]string)); n != maxFieldItems {
		t.Errorf("a page of 500 matches gave %d; want the first %d", n, maxFieldItems)
	}
}
