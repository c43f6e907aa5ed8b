package politeness

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// pathOf is what Robots.Check matches for a URL: its escaped path, and its
// query after '?'.
func pathOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p := u.EscapedPath()
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	return p
}

type robotsCase struct {
	name, robots, agent, url string
	allowed                  bool
}

// Google's reference tests (github.com/google/robotstxt, robots_test.cc,
// Apache License 2.0), translated: the cases of the behaviours RFC 9309
// shares, and Google's own reading of a line of two words whose colon was
// forgotten ("disallow /": the line is its author's rule). Left out, being
// Google's own: index.html meaning its directory, lines cut at 16 664
// bytes. Kept apart (TestRobotsDeviationsFromGoogle): where this crawler's
// canonical URLs make it compare otherwise.
var googleRobotsCases = func() []robotsCase {
	const groups = "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n"
	var cs []robotsCase
	add := func(name, robots, agent, u string, allowed bool) {
		cs = append(cs, robotsCase{name, robots, agent, u, allowed})
	}
	// ID_LineSyntax_Line
	add("line syntax", "user-agent: FooBot\ndisallow: /\n", "FooBot", "http://foo.bar/x/y", false)
	add("line syntax, unknown keys", "foo: FooBot\nbar: /\n", "FooBot", "http://foo.bar/x/y", true)
	add("line syntax, no colon", "user-agent FooBot\ndisallow /\n", "FooBot", "http://foo.bar/x/y", false)
	// Not Google's case, its rule: three words without a colon are no line.
	add("line syntax, no colon, three words", "user-agent FooBot\ndisallow / x\n", "FooBot", "http://foo.bar/x/y", true)
	add("line syntax, no colon, tabs", "user-agent\tFooBot\n\tdisallow\t /x \n", "FooBot", "http://foo.bar/x/y", false)
	add("line syntax, one word", "user-agent FooBot\ndisallow\n", "FooBot", "http://foo.bar/x/y", true)
	// ID_LineSyntax_Groups
	for _, c := range []struct {
		agent, u string
		allowed  bool
	}{{"FooBot", "/x/b", true}, {"FooBot", "/z/d", true}, {"FooBot", "/y/c", false}, {"BarBot", "/y/c", true},
		{"BarBot", "/w/a", true}, {"BarBot", "/z/d", false}, {"BazBot", "/z/d", true},
		{"FooBot", "/foo/bar/", false}, {"BarBot", "/foo/bar/", false}, {"BazBot", "/foo/bar/", false}} {
		add("groups "+c.agent+" "+c.u, groups, c.agent, "http://foo.bar"+c.u, c.allowed)
	}
	// ID_REPLineNamesCaseInsensitive, ID_UserAgentValueCaseInsensitive
	for _, body := range []string{"USER-AGENT: FooBot\nALLOW: /x/\nDISALLOW: /\n", "uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n"} {
		add("key case "+body[:5], body, "FooBot", "http://foo.bar/x/y", true)
		add("key case "+body[:5]+" disallowed", body, "FooBot", "http://foo.bar/a/b", false)
	}
	for _, ua := range []string{"FOO BAR", "foo bar", "FoO bAr"} {
		for _, agent := range []string{"Foo", "foo"} {
			body := "User-Agent: " + ua + "\nAllow: /x/\nDisallow: /\n"
			add("agent case "+ua+" "+agent, body, agent, "http://foo.bar/x/y", true)
			add("agent case "+ua+" "+agent+" disallowed", body, agent, "http://foo.bar/a/b", false)
		}
	}
	// ID_GlobalGroups_Secondary
	add("no file", "", "FooBot", "http://foo.bar/x/y", true)
	add("specific over global", "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n", "FooBot", "http://foo.bar/x/y", false)
	add("global", "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n", "BarBot", "http://foo.bar/x/y", true)
	add("no group applies", "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n", "QuxBot", "http://foo.bar/x/y", true)
	// ID_AllowDisallow_Value_CaseSensitive
	add("value case", "user-agent: FooBot\ndisallow: /x/\n", "FooBot", "http://foo.bar/x/y", false)
	add("value case upper", "user-agent: FooBot\ndisallow: /X/\n", "FooBot", "http://foo.bar/x/y", true)
	// ID_LongestMatch
	const page = "http://foo.bar/x/page.html"
	add("longest: disallow", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n", "FooBot", page, false)
	add("longest: allow", "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n", "FooBot", page, true)
	add("longest: dir", "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n", "FooBot", "http://foo.bar/x/", false)
	add("empty rules", "user-agent: FooBot\ndisallow: \nallow: \n", "FooBot", page, true)
	add("equal: allow wins", "user-agent: FooBot\ndisallow: /\nallow: /\n", "FooBot", page, true)
	add("/x vs /x/: /x", "user-agent: FooBot\ndisallow: /x\nallow: /x/\n", "FooBot", "http://foo.bar/x", false)
	add("/x vs /x/: /x/", "user-agent: FooBot\ndisallow: /x\nallow: /x/\n", "FooBot", "http://foo.bar/x/", true)
	add("equal page: allow wins", "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n", "FooBot", page, true)
	add("wildcard longer", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "FooBot", "http://foo.bar/page.html", false)
	add("wildcard, no match", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "FooBot", "http://foo.bar/page", true)
	add("prefix longer than wildcard", "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n", "FooBot", page, true)
	add("wildcard elsewhere", "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n", "FooBot", "http://foo.bar/x/y.html", false)
	add("specific group", "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n", "FooBot", "http://foo.bar/x/page", true)
	add("specific group disallows", "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n", "FooBot", "http://foo.bar/y/page", false)
	// ID_Encoding
	add("query unencoded", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n", "FooBot",
		"http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", true)
	add("3-byte character in a rule", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n", "FooBot", "http://foo.bar/foo/bar/%E3%83%84", true)
	add("escaped 3-byte character", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n", "FooBot", "http://foo.bar/foo/bar/%E3%83%84", true)
	add("escaped unreserved, escaped URL", "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n", "FooBot", "http://foo.bar/foo/bar/%62%61%7A", true)
	// ID_SpecialCharacters
	const star = "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n"
	add("star: disallowed", star, "FooBot", "http://foo.bar/foo/bar/quz", false)
	add("star: /foo/quz", star, "FooBot", "http://foo.bar/foo/quz", true)
	add("star: //quz", star, "FooBot", "http://foo.bar/foo//quz", true)
	add("star: bax", star, "FooBot", "http://foo.bar/foo/bax/quz", true)
	const dollar = "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n"
	add("dollar: exact", dollar, "FooBot", "http://foo.bar/foo/bar", false)
	add("dollar: qux", dollar, "FooBot", "http://foo.bar/foo/bar/qux", true)
	add("dollar: slash", dollar, "FooBot", "http://foo.bar/foo/bar/", true)
	add("dollar: baz", dollar, "FooBot", "http://foo.bar/foo/bar/baz", true)
	const hash = "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n"
	add("comment line", hash, "FooBot", "http://foo.bar/foo/bar", true)
	add("comment after a rule", hash, "FooBot", "http://foo.bar/foo/quz", false)
	// GoogleOnly_DocumentationChecks: the RFC's matching, by Google's documentation.
	for _, c := range []struct {
		allow string
		yes   []string
		no    []string
	}{
		{"/fish", []string{"/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fishheads/yummy.html", "/fish.html?id=anything"},
			[]string{"/bar", "/Fish.asp", "/catfish", "/?id=fish"}},
		{"/fish*", []string{"/fish", "/fish.html", "/fish/salmon.html", "/fishheads", "/fishheads/yummy.html", "/fish.html?id=anything"},
			[]string{"/bar", "/Fish.bar", "/catfish", "/?id=fish"}},
		{"/fish/", []string{"/fish/", "/fish/salmon", "/fish/?salmon", "/fish/salmon.html", "/fish/?id=anything"},
			[]string{"/bar", "/fish", "/fish.html", "/Fish/Salmon.html"}},
		{"/*.php", []string{"/filename.php", "/folder/filename.php", "/folder/filename.php?parameters", "//folder/any.php.file.html",
			"/filename.php/", "/index?f=filename.php/"}, []string{"/bar", "/php/", "/index?php", "/windows.PHP"}},
		{"/*.php$", []string{"/filename.php", "/folder/filename.php"},
			[]string{"/bar", "/filename.php?parameters", "/filename.php/", "/filename.php5", "/php/", "/filename?php", "/aaaphpaaa", "//windows.PHP"}},
		{"/fish*.php", []string{"/fish.php", "/fishheads/catfish.php?parameters"}, []string{"/bar", "/Fish.PHP"}},
	} {
		body := "user-agent: FooBot\ndisallow: /\nallow: " + c.allow + "\n"
		for _, p := range c.yes {
			add("docs "+c.allow+" "+p, body, "FooBot", "http://foo.bar"+p, true)
		}
		for _, p := range c.no {
			add("docs "+c.allow+" "+p, body, "FooBot", "http://foo.bar"+p, false)
		}
	}
	add("precedence /p", "user-agent: FooBot\nallow: /p\ndisallow: /\n", "FooBot", "http://example.com/page", true)
	add("precedence equal", "user-agent: FooBot\nallow: /folder\ndisallow: /folder\n", "FooBot", "http://example.com/folder/page", true)
	add("precedence wildcard", "user-agent: FooBot\nallow: /page\ndisallow: /*.htm\n", "FooBot", "http://example.com/page.htm", false)
	add("precedence /$", "user-agent: FooBot\nallow: /$\ndisallow: /\n", "FooBot", "http://example.com/", true)
	add("precedence /$ page", "user-agent: FooBot\nallow: /$\ndisallow: /\n", "FooBot", "http://example.com/page.html", false)
	// ID_LinesNumbersAreCountedCorrectly: every line ending.
	for name, nl := range map[string]string{"LF": "\n", "CRLF": "\r\n", "CR": "\r"} {
		body := strings.ReplaceAll("User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /\n", "\n", nl)
		add("line ends "+name, body, "bar", "http://foo.bar/x", false)
		add("line ends "+name+" foo", body, "foo", "http://foo.bar/x", true)
	}
	add("no final newline", "User-Agent: foo\nAllow: /some/path\nUser-Agent: bar\n\n\nDisallow: /", "bar", "http://foo.bar/x", false)
	// ID_UTF8ByteOrderMarkIsSkipped
	for name, bom := range map[string]string{"full": "\xEF\xBB\xBF", "two bytes": "\xEF\xBB", "one byte": "\xEF"} {
		add("BOM "+name, bom+"User-Agent: foo\nDisallow: /AnyValue\n", "foo", "http://foo.bar/AnyValue", false)
	}
	add("broken BOM: the first line is garbage", "\xEF\x11\xBFUser-Agent: foo\nDisallow: /AnyValue\n", "foo", "http://foo.bar/AnyValue", true)
	return cs
}()

func TestRobotsGoogleReferenceCases(t *testing.T) {
	for _, c := range googleRobotsCases {
		if got := ParseRobotsTxt([]byte(c.robots)).Allowed(c.agent, pathOf(t, c.url)); got != c.allowed {
			t.Errorf("%s: %s for %s: allowed %v, want %v", c.name, c.url, c.agent, got, c.allowed)
		}
	}
	t.Logf("%d cases", len(googleRobotsCases))
}

// Where this crawler answers otherwise than Google's reference, on
// purpose: its URLs are canonical (escaped unreserved characters decoded,
// every other byte escaped), so rules are normalized the same way.
func TestRobotsDeviationsFromGoogle(t *testing.T) {
	// Google: a rule /foo/bar/%62%61%7A does not match /foo/bar/baz ("should
	// not be relied on"). This crawler fetches /foo/bar/%62%61%7A as
	// /foo/bar/baz, so the rule must match it to mean anything.
	r := ParseRobotsTxt([]byte("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n"))
	if !r.Allowed("FooBot", "/foo/bar/baz") {
		t.Error("an escaped unreserved rule does not match the URL as the crawler writes it")
	}
	// Google: a raw ツ in a URL does not match (the caller escapes URLs).
	// Paths are normalized here as rules are, so it does.
	r = ParseRobotsTxt([]byte("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n"))
	if !r.Allowed("FooBot", "/foo/bar/ツ") {
		t.Error("a raw non-ASCII path is not normalized as its rule is")
	}
}

// The findings: each failed with temoto/robotstxt.
func TestRobotsFileThatDoesNotParseIsReadLineByLine(t *testing.T) {
	for _, c := range []struct{ name, body, path string }{
		{"a rule before any user-agent", "Disallow: /private\nUser-agent: *\nDisallow: /secret\n", "/page"},
		{"a crawl-delay before any user-agent", "Crawl-delay: 5\nUser-agent: *\nDisallow: /secret\n", "/page"},
		{"crawl-delay abc", "User-agent: *\nCrawl-delay: abc\nDisallow: /secret\n", "/page"},
		{"crawl-delay 1s", "User-agent: *\nCrawl-delay: 1s\nDisallow: /secret\n", "/page"},
		{"crawl-delay empty", "User-agent: *\nCrawl-delay:\nDisallow: /secret\n", "/page"},
		{"crawl-delay -1", "User-agent: *\nCrawl-delay: -1\nDisallow: /secret\n", "/page"},
	} {
		r := ParseRobotsTxt([]byte(c.body))
		if !r.Allowed("RedCrawl", c.path) || r.Allowed("RedCrawl", "/secret/x") {
			t.Errorf("%s: the file is not read line by line (allowed %s: %v, /secret/x: %v)", c.name, c.path,
				r.Allowed("RedCrawl", c.path), r.Allowed("RedCrawl", "/secret/x"))
		}
	}
}

func TestRobotsPercentNormalization(t *testing.T) {
	for _, c := range []struct{ rule, path string }{
		{"/a%3cb", "/a%3Cb"}, {"/a%3Cb", "/a%3cb"}, {"/%7Euser", "/~user"}, {"/~user", "/%7Euser"},
		{"/foo/bar/ツ", "/foo/bar/%E3%83%84"}, {"/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84"},
	} {
		r := ParseRobotsTxt([]byte("User-agent: *\nDisallow: " + c.rule + "\n"))
		if r.Allowed("RedCrawl", c.path) {
			t.Errorf("Disallow: %s does not match %s", c.rule, c.path)
		}
	}
}

func TestRobotsUserAgentIsAProductTokenNotAPrefix(t *testing.T) {
	r := ParseRobotsTxt([]byte("User-agent: Red\nDisallow: /\n\nUser-agent: RedCrawl/2.0 (+https://x)\nDisallow: /only-this\n"))
	if !r.Allowed("RedCrawl", "/page") || r.Allowed("RedCrawl", "/only-this") {
		t.Error("User-agent: Red applied to RedCrawl, or RedCrawl/2.0 did not")
	}
	if !r.Allowed("Other", "/page") {
		t.Error("a crawler named nowhere, with no '*' group, was disallowed")
	}
}

func TestRobotsCrawlDelay(t *testing.T) {
	for _, c := range []struct {
		body   string
		want   time.Duration
		capped bool
	}{
		{"User-agent: *\nCrawl-delay: 2.5\n", 2500 * time.Millisecond, false},
		{"User-agent: *\nCrawl-delay: 86400\n", MaxCrawlDelay, true},
		{"User-agent: *\nCrawl-delay: 1e300\n", MaxCrawlDelay, true},
		{"User-agent: *\nCrawl-delay: abc\n", 0, false},
		{"User-agent: other\nCrawl-delay: 5\nUser-agent: *\nCrawl-delay: 1\n", time.Second, false},
	} {
		if d, capped := ParseRobotsTxt([]byte(c.body)).CrawlDelay("RedCrawl"); d != c.want || capped != c.capped {
			t.Errorf("%q: delay %v capped %v; want %v %v", c.body, d, capped, c.want, c.capped)
		}
	}
}

func TestRobotsSitemapsAnywhere(t *testing.T) {
	r := ParseRobotsTxt([]byte("Sitemap: http://foo.bar/a.xml\nUser-Agent: foo\nAllow: /x\nsitemap: http://foo.bar/b.xml # two\n"))
	if strings.Join(r.Sitemaps, " ") != "http://foo.bar/a.xml http://foo.bar/b.xml" {
		t.Errorf("sitemaps %v", r.Sitemaps)
	}
}

func TestRobotsStatus(t *testing.T) {
	if !RobotsFromStatus(404, nil).Allowed("RedCrawl", "/x") || !RobotsFromStatus(403, nil).Allowed("RedCrawl", "/x") {
		t.Error("a 4xx robots.txt does not allow everything")
	}
	if RobotsFromStatus(304, nil).Allowed("RedCrawl", "/x") {
		t.Error("an unexpected status allows")
	}
	if !RobotsFromStatus(200, []byte("User-agent: *\nDisallow: /\n")).Allowed("RedCrawl", "/robots.txt") {
		t.Error("/robots.txt itself is disallowed")
	}
}
