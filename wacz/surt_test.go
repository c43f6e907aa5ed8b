package wacz

import "testing"

// SURTs as replay tools key their lookups: www dropped, labels reversed,
// a port but not the scheme's own, the path as sent, parameters sorted.
func TestSURT(t *testing.T) {
	for in, want := range map[string]string{
		"http://www.Example.com/A/b?z=1&a=2": "com,example)/a/b?a=2&z=1",
		"https://www2.example.com":           "com,example)/",
		"http://example.com:8080/x":          "com,example:8080)/x",
		"http://example.com:80/x":            "com,example)/x",
		"https://example.com:443/":           "com,example)/",
		"http://127.0.0.10:8001/p/1.html":    "10,0,0,127:8001)/p/1.html",
		"http://h1.site.test/a%20b":          "test,site,h1)/a%20b",
		"urn:pageinfo:http://x/":             "urn:pageinfo:http://x/",
	} {
		if got := SURT(in); got != want {
			t.Errorf("SURT(%q) = %q; want %q", in, got, want)
		}
	}
}
