package parse

import (
	"bytes"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// htmlPieces are what generated documents are made of: the markup whose
// reading the scanner and the tokenizer could differ on (comments and
// their odd ends, raw text and its end tags, scripts that hide their end,
// quotes, references in attributes, NUL, carriage returns), and links.
var htmlPieces = []string{
	"<", ">", "</", "/", "<!--", "-->", "--!>", "<!-->", "<!--->", "-", "--", "!", "<!DOCTYPE html>", "<!doctype", "<!",
	"<![CDATA[", "]]>", "<?xml ?>", "<?", "</>", "</ x>", "<a href=", "<A HREF=", "<a href=\"", "\"", "'", "=", " ", "\t", "\n",
	"\r", "\r\n", "\f", "\x00", "<area href=x>", "<link rel=canonical href=", "<link rel=\"Canonical Next\" href='",
	"<meta name=robots content=nofollow>", "<meta name=robots content=", "<meta name=redcrawl content=\"noindex, nofollow\">",
	"<meta http-equiv=refresh content=\"0; url=", "<META HTTP-EQUIV=Refresh CONTENT='5,URL=", "<base href=", "<iframe src=",
	"<frame src=", "<title>", "</title>", "<title/>", "</TITLE >", "<title a=/>", "<script>", "</script>", "</SCRIPT/>",
	"<script type=x>", "<!--<script>", "<script>", "</script -->", "-->", "<style>", "</style>", "<textarea>", "</textarea>",
	"<noscript>", "</noscript>", "<plaintext>", "<xmp>", "</xmp>", "<noembed>", "</noembed>", "<noframes>", "</noframes>",
	"</iframe>", "&amp;", "&amp", "&ampx", "&amp=", "&copy", "&copy=", "&copyx", "&#65;", "&#x41", "&#X6a;", "&#0;", "&#x110000;",
	"&#128;", "&#;", "&notit;", "&notin;", "&notin", "&semi;", "&fjlig;", "&;", "&", "&lt", "a.html", "../b", "#f",
	"?q=1&utm_source=x", "http://other.example/", "//other.example/p", "mailto:x", "javascript:void(0)", "rel=nofollow",
	" rel=\"nofollow\"", "<a href=x rel=nofollow>", "<a href=y href=z>", "<a HREF=u1 href=u2>", "<a =href=q>", "<p a=/>",
	"<br/>", "é", "\xff", "<div", "<img src=x>", "<body>", "</a>", "x", "/>", "<a/href=s>", "<a href = 'sp ace' >",
	"<a href=l1.html>", "<area href='l2.html'>", "<title>t &amp; t</title>",
}

// sameExtraction fails t unless the scanner's extraction of doc is the
// tokenizer's.
func sameExtraction(t interface{ Fatalf(string, ...any) }, base *url.URL, doc []byte, lim Limits) {
	want, err := oracleExtract(base, bytes.NewReader(doc), lim)
	if err != nil {
		t.Fatalf("tokenizer: %v", err)
	}
	got := ExtractBytes(base, doc, lim)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("document %q:\nscanner   %+v\ntokenizer %+v", doc, *got, *want)
	}
}

// genTag is a tag of the names and attributes extraction reads, whole or
// broken: any case, any separators, values quoted or not, with character
// references and the bytes the tokenizer converts, ended by '>', "/>",
// or nothing.
func genTag(t *rapid.T) string {
	var b strings.Builder
	b.WriteString("<")
	if rapid.IntRange(0, 5).Draw(t, "endTag") == 0 {
		b.WriteString("/")
	}
	b.WriteString(rapid.SampledFrom([]string{"a", "A", "area", "link", "LINK", "meta", "base", "iframe", "frame", "title",
		"TITLE", "script", "style", "textarea", "noscript", "xmp", "plaintext", "noframes", "noembed", "div", "br", "body"}).Draw(t, "name"))
	for i, n := 0, rapid.IntRange(0, 4).Draw(t, "attrs"); i < n; i++ {
		b.WriteString(rapid.SampledFrom([]string{" ", "  ", "\t", "\n", "/", "\f", " / "}).Draw(t, "sep"))
		b.WriteString(rapid.SampledFrom([]string{"href", "HREF", "rel", "src", "name", "content", "http-equiv", "=x", "x", "a"}).Draw(t, "key"))
		if rapid.IntRange(0, 4).Draw(t, "noValue") == 0 {
			continue
		}
		b.WriteString(rapid.SampledFrom([]string{"=", " = ", "=\n"}).Draw(t, "eq"))
		quote := rapid.SampledFrom([]string{`"`, "'", ""}).Draw(t, "quote")
		b.WriteString(quote)
		for j, k := 0, rapid.IntRange(0, 3).Draw(t, "valueParts"); j < k; j++ {
			b.WriteString(rapid.SampledFrom([]string{"x.html", "../y", "&amp;", "&ampx", "&amp=", "&copy", "&copyx", "&copy=",
				"&#65;", "&#x41", "&#0;", "&notin", "&notit;", "&fjlig;", "&semi;", "&", "\x00", "\r\n", "\r", " ", "canonical",
				"nofollow", "robots", "refresh", "0; url=z.html", "?a=1&b=2", "#f", ">", "/", "'", `"`, "redcrawl"}).Draw(t, "value"))
		}
		if rapid.IntRange(0, 6).Draw(t, "unclosed") > 0 {
			b.WriteString(quote)
		}
	}
	b.WriteString(rapid.SampledFrom([]string{">", ">", ">", "/>", " />", ""}).Draw(t, "close"))
	return b.String()
}

// genMarkup is anything else: text, comments and their odd ends,
// doctypes, processing instructions, a script's escapes.
func genMarkup(t *rapid.T) string {
	return rapid.SampledFrom([]string{"x", " ", "<", "<<", "&amp;", "-->", "--", "-", "!", "</", "<!", "<?x>", "<!-->", "<!--->",
		"<!--", "<!-- c -->", "<!-- --!>", "--!>", "<!--x--!-y-->", "<!DOCTYPE html>", "<!doctype", "</>", "</ x>",
		"<![CDATA[<a href=q>]]>", "<script>", "</script>", "</SCRIPT", "<script", "</script", "\r", "\x00", "<a href=t.html>",
		"</title>", "</TITLE >", "</style>", "</textarea>", "</noscript>", "</xmp>", "</iframe>", "<body>",
		"<meta name=robots content=noindex>", "<meta name=REDCRAWL content='nofollow, noarchive'>",
		"<link rel=canonical href=c.html>", "<base href=/b/>"}).Draw(t, "markup")
}

// The scanner extracts what the tokenizer extracted, on documents made of
// the markup the two could read differently.
func TestTheScannerExtractsAsTheTokenizer(t *testing.T) {
	base, _ := url.Parse("http://example.com/docs/page.html")
	rapid.Check(t, func(t *rapid.T) {
		var doc strings.Builder
		tags := rapid.IntRange(0, 4).Draw(t, "tagWeight")
		for i, n := 0, rapid.IntRange(0, 40).Draw(t, "items"); i < n; i++ {
			if rapid.IntRange(0, 4).Draw(t, "kind") < tags {
				doc.WriteString(genTag(t))
			} else {
				doc.WriteString(genMarkup(t))
			}
		}
		lim := Limits{MaxLinks: rapid.SampledFrom([]int{0, 1, 3}).Draw(t, "maxLinks"), Agent: "redcrawl"}
		sameExtraction(t, base, []byte(doc.String()), lim)
		if got, want := HeadOf([]byte(doc.String()), "redcrawl"), oracleHeadOf([]byte(doc.String()), "redcrawl"); got != want {
			t.Fatalf("document %q: HeadOf %+v, on the tokenizer %+v", doc.String(), got, want)
		}
	})
}

// Documents the tokenizer reads by rules a random one seldom reaches.
func TestTheScannerExtractsHardDocumentsAsTheTokenizer(t *testing.T) {
	base, _ := url.Parse("http://example.com/docs/page.html")
	for _, doc := range []string{
		"<script><!--<script></script><script></script><a href=x>",
		"<script><!--<script></script>--><a href=y>",
		"<script><!--</script><a href=z>",
		"<script><!-- -- --><a href=q></script><a href=r>",
		"<script><!--<1<script></script><a href=s>",           // '<' and no letter in escaped text: back to data
		"<script><!-- --><script></script><a href=t>",         // "-->" ends the escape: "<script>" is text again
		"<script><!--<script>--></script><a href=u></script>", // "-->" in double-escaped text: data
		"<!--><a href=a>", "<!---><a href=b>", "<!-- --!><a href=c>", "<!-- --!-><a href=d>-->",
		"<a href=&ampx>", "<a href=&copyx>", "<a href=&copy=>", "<a href='&notit;'>", "<a href='?a&lang=1'>",
		"<title a=/>T</title>", "<title/>T</title><title>U</title>", "<title></title><title>V</title>",
		"<a =href=q>", "<a href=x href=y>", "<A HREF=u1 href=u2>", "<textarea><a href=no></textarea><a href=yes>",
		"<plaintext><a href=no>", "<xmp></xmp ><a href=yes>", "<iframe src=f.html><a href=no></iframe><a href=yes>",
	} {
		sameExtraction(t, base, []byte(doc), Limits{})
	}
}

// The same on every page of the three manuals of the real-site crawl,
// where they are installed, and on the repository's test page.
func TestTheScannerExtractsRealPagesAsTheTokenizer(t *testing.T) {
	doc, err := os.ReadFile("../testdata/links.html")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("http://example.com/docs/page.html")
	sameExtraction(t, base, doc, Limits{})
	if testing.Short() {
		return
	}
	pages, _ := manualPages(nil)
	for _, p := range pages {
		sameExtraction(t, p.u, p.body, Limits{})
	}
	t.Logf("%d pages of the manuals", len(pages))
}

func FuzzTheScannerExtractsAsTheTokenizer(f *testing.F) {
	for _, p := range htmlPieces {
		f.Add(p)
	}
	f.Add("<title>a &amp; b</title><a href='x.html'>x</a><script>if (a<b) document.write('<a href=no>')</script><a href=y>")
	base, _ := url.Parse("http://example.com/docs/page.html")
	f.Fuzz(func(t *testing.T, doc string) {
		sameExtraction(t, base, []byte(doc), Limits{MaxLinks: 5, Agent: "redcrawl"})
	})
}
