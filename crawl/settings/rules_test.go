package settings

import (
	"net/url"
	"testing"
)

func TestRulesSkip(t *testing.T) {
	s := Default()
	s.Allow = []string{`^https://docs\.example/`}
	s.Deny = []string{`/private/`, `\.pdf$`}
	r, err := NewRules(s)
	if err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]string{
		"https://docs.example/guide/intro":                                 "",
		"https://docs.example/private/x":                                   SkipDenied,
		"https://docs.example/a.pdf":                                       SkipDenied,
		"https://blog.example/post":                                        SkipNotAllowed,
		"https://docs.example/a/b/a/a/a":                                   SkipPathRepeat,
		"https://docs.example/a/b/a/a":                                     "",
		"https://docs.example/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17":   SkipPathDepth,
		"https://docs.example/s?a=1&b=2&c=3&d=4":                           "",
		"https://docs.example/s?a=1&b=2&c=3&d=4&e=5":                       SkipQueryParams,
		"https://docs.example/" + string(make([]byte, 0)) + longPath(1100): SkipURLLength,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Skip(u, raw); got != want {
			t.Errorf("skip(%s) = %q; want %q", raw[:min(len(raw), 60)], got, want)
		}
	}
	s.Deny = []string{"("}
	if _, err := NewRules(s); err == nil {
		t.Fatal("a bad --deny pattern was accepted")
	}
}

func longPath(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return string(b)
}
