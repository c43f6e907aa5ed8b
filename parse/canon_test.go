package parse

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestCanonicalize(t *testing.T) {
	base, _ := url.Parse("http://Example.com/a/b/c.html?x=1#top")
	for _, tc := range []struct{ in, want string }{
		{"HTTP://EXAMPLE.COM", "http://example.com/"},
		// As browsers: C0 controls around a URL dropped, a NUL inside escaped.
		{"http://example.com/\x00", "http://example.com/"},
		{"http://example.com/a\x00b", "http://example.com/a%00b"},
		// The WHATWG findings of issue 19: a browser's URL, not another.
		{"\\x", "http://example.com/x"}, // backslash is slash: an absolute path
		{"\\\\x\\hello", "http://x/hello"},
		{"///test", "http://test/"},
		{"http:/example.com/", "http://example.com/example.com/"}, // same scheme as the base: relative
		{"https:example.com/", "https://example.com/"},
		{"http:\\\\www.google.com\\foo", "http://www.google.com/foo"},
		{"http://example.com:0080/", "http://example.com/"},
		{"http://0xffffffff/", "http://255.255.255.255/"},
		{"http://192.168.257/", "http://192.168.1.1/"},
		{"http://１９２.１６８.０.１/", "http://192.168.0.1/"},
		{"http://example.com/?'", "http://example.com/?%27"},
		{"http://example.com/?%27", "http://example.com/?%27"},
		{"http://example.com/?q=a%20b", "http://example.com/?q=a+b"},
		{"http://example.com/?q=a+b", "http://example.com/?q=a+b"},
		{"http://example.com/?&a=1&&b=2&", "http://example.com/?a=1&b=2"},
		{"http://example.com:80/", "http://example.com/"},
		{"https://example.com:443/x", "https://example.com/x"},
		{"http://example.com:8080/x", "http://example.com:8080/x"},
		{"https://example.com:80/x", "https://example.com:80/x"},
		{"http://example.com/a/./b/../c", "http://example.com/a/c"},
		{"http://example.com/../../x", "http://example.com/x"},
		{"http://example.com/a/b/..", "http://example.com/a/"},
		{"http://example.com/page#section", "http://example.com/page"},
		{"http://example.com/%7Euser/%41%62", "http://example.com/~user/Ab"},
		{"http://example.com/a%2fb", "http://example.com/a%2Fb"},
		{"http://example.com/a b", "http://example.com/a%20b"},
		{"http://example.com/ü", "http://example.com/%C3%BC"},
		{"http://example.com/?b=2&a=1", "http://example.com/?b=2&a=1"},
		{"http://example.com/?q=a%20b&r=%7e", "http://example.com/?q=a+b&r=~"}, // a space is +, as forms write it
		{"http://example.com/100%", "http://example.com/100%25"},
		{"http://user:pw@example.com/", "http://example.com/"},
		{"http://bücher.example/", "http://xn--bcher-kva.example/"},
		{"http://EXAMPLE.com./x", "http://example.com/x"},
		{"http://[::1]:80/", "http://[::1]/"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/"},
		{"  http://example.com/x  ", "http://example.com/x"},
		{"http://example.com/a\n/b", "http://example.com/a/b"},
		// relative references against base
		{"d.html", "http://example.com/a/b/d.html"},
		{"../d", "http://example.com/a/d"},
		{"/root", "http://example.com/root"},
		{"?y=2", "http://example.com/a/b/c.html?y=2"},
		{"#frag", "http://example.com/a/b/c.html?x=1"},
		{"//other.example/p", "http://other.example/p"},
	} {
		u, err := Canonicalize(base, tc.in)
		if err != nil {
			t.Errorf("Canonicalize(%q): %v", tc.in, err)
			continue
		}
		if got := u.String(); got != tc.want {
			t.Errorf("Canonicalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCanonicalizeRejects(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"mailto:a@example.com", ErrScheme},
		{"javascript:alert(1)", ErrScheme},
		{"ftp://example.com/", ErrScheme},
		{"example.com/page", ErrURL},
		{"http://", ErrURL},
		{"http://exa mple.com/", ErrURL},
		{"http://example.com:99999999999/", ErrURL},
		{"", ErrURL},
		{"http://256.256.256.256/", ErrURL},
		{"http://1.2.3.4.5/", ErrURL},
		{"http://example.com/" + strings.Repeat("a", MaxURLLength), ErrURL},
	} {
		_, err := Canonicalize(nil, tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("Canonicalize(%q) = %v, want %v", tc.in, err, tc.want)
		}
	}
}

// FuzzCanonicalize: never panics; what it accepts is http(s), bounded, and
// a fixed point (canonicalizing a canonical URL changes nothing).
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{"http://example.com/a/../b?q=%7e#f", "HTTPS://Bücher.example:443/%41", "http://[::1]:80/..", "//x/y", "http://a/%zz"} {
		f.Add(s)
	}
	base, _ := url.Parse("http://base.example/dir/page")
	f.Fuzz(func(t *testing.T, in string) {
		u, err := Canonicalize(base, in)
		if err != nil {
			return
		}
		s := u.String()
		if u.Scheme != "http" && u.Scheme != "https" || len(s) > MaxURLLength {
			t.Fatalf("%q → %q", in, s)
		}
		again, err := Canonicalize(nil, s)
		if err != nil {
			t.Fatalf("%q → %q, which is then refused: %v", in, s, err)
		}
		if again.String() != s {
			t.Fatalf("not a fixed point: %q → %q → %q", in, s, again.String())
		}
	})
}

func TestTrackingParametersAreStripped(t *testing.T) {
	for in, want := range map[string]string{
		"http://a.example/p?utm_source=x&id=3&utm_medium=y": "http://a.example/p?id=3",
		"http://a.example/p?gclid=abc":                      "http://a.example/p",
		"http://a.example/p?b=2&fbclid=z&a=1":               "http://a.example/p?b=2&a=1",
		"http://a.example/p?UTM_Campaign=q&x=1":             "http://a.example/p?x=1",
		"http://a.example/p?utmost=1&gclidx=2":              "http://a.example/p?utmost=1&gclidx=2",
	} {
		if got, err := CanonicalString(in); err != nil || got != want {
			t.Errorf("CanonicalString(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestTrackingParametersCanBeKept(t *testing.T) {
	u, err := CanonicalizeKeeping(nil, "http://a.example/p?utm_source=x&id=3", true)
	if err != nil || u.String() != "http://a.example/p?utm_source=x&id=3" {
		t.Fatalf("kept: %v, %v", u, err)
	}
	base, _ := url.Parse("http://a.example/")
	p, err := Extract(base, strings.NewReader(`<a href="/q?gclid=1&x=2">x</a>`), Limits{KeepTracking: true})
	if err != nil || len(p.Links) != 1 || p.Links[0] != "http://a.example/q?gclid=1&x=2" {
		t.Fatalf("Extract keeping tracking parameters: %v, %v", p, err)
	}
}
