package parse

import (
	"bytes"
	"io"
	"net/url"

	"golang.org/x/net/html"
)

// oracleMaxTagName: the tokenizer-based extraction told names apart up
// to "noframes".
const oracleMaxTagName = 8

// rawTagName is the lower-cased name of the tag whose raw bytes are raw
// ("<A href=…>", "</title >"), in buf; longer names are cut (no tag
// extractTokens looks for is that long, so they match none).
func oracleTagName(raw []byte, buf *[oracleMaxTagName]byte) []byte {
	i := 1
	if i < len(raw) && raw[i] == '/' {
		i++
	}
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '/' || c == '>' {
			break
		}
		if n == oracleMaxTagName {
			return nil // longer than any name looked for
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return buf[:n]
}

// oracleExtract is extraction as it was before the scanner, on the HTML
// tokenizer: what the scanner is held to.
func oracleExtract(pageURL *url.URL, body io.Reader, lim Limits) (*Page, error) {
	lim = lim.withDefaults()
	p := &Page{}
	ls := &linkSet{p: p, base: pageURL, lim: lim, seen: map[string]bool{}}
	z := html.NewTokenizer(body)
	inTitle, haveTitle, haveBase := false, false, false
	var keys, vals [maxAttrs][]byte
	var nameBuf [oracleMaxTagName]byte
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				return nil, err
			}
			if p.NoFollow { // <meta name=robots content=nofollow> anywhere: no link is followed
				p.Links, p.Truncated = nil, false
			}
			return p, nil
		case html.TextToken:
			if inTitle && !haveTitle {
				p.Title, haveTitle = clipTitle(string(z.Text()), lim), true
			}
		case html.EndTagToken:
			if name := oracleTagName(z.Raw(), &nameBuf); string(name) == "title" {
				inTitle = false
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			// The name off the raw bytes: the tokenizer's TagName copies it,
			// an allocation for every tag of the page, most of them no link.
			name := oracleTagName(z.Raw(), &nameBuf)
			if string(name) == "title" {
				inTitle = tt == html.StartTagToken
				continue
			}
			if !linkTags[string(name)] { // no allocation: the compiler looks up []byte keys in place
				continue
			}
			n := 0
			for more := true; more && n < maxAttrs; {
				keys[n], vals[n], more = z.TagAttr()
				if keys[n] != nil {
					n++
				}
			}
			attr := func(k, def string) string {
				for i := 0; i < n; i++ {
					if string(keys[i]) == k {
						return string(vals[i]) // the first of repeated attributes, as the tree builder keeps
					}
				}
				return def
			}
			switch tag := string(name); tag {
			case "base":
				if href := attr("href", "\x00"); href != "\x00" && !haveBase {
					ls.setBase(baseFor(pageURL, href))
					haveBase = true
				}
			case "meta":
				p.meta(attr("name", ""), attr("content", ""), lim.Agent)
				ls.element(tag, attr)
			default:
				ls.element(tag, attr)
			}
		}
	}
}

// oracleHeadOf is HeadOf as it was, on the tokenizer.
func oracleHeadOf(body []byte, agent string) Head {
	var h Head
	z := html.NewTokenizer(bytes.NewReader(body))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return h
		case html.StartTagToken, html.SelfClosingTagToken:
			name, more := z.TagName()
			attrs := map[string]string{}
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				if _, dup := attrs[string(k)]; !dup { // the first of a repeated attribute counts, as in a browser
					attrs[string(k)] = string(v)
				}
			}
			switch string(name) {
			case "body":
				return h
			case "meta":
				if m, ok := metaRobots(attrs["name"], attrs["content"], agent); ok {
					h.Robots.Merge(m)
				}
			case "link":
				if href := attrs["href"]; href != "" && h.Canonical == "" && hasToken(attrs["rel"], "canonical") {
					h.Canonical = href
				}
			case "base":
				if href := attrs["href"]; href != "" && h.Base == "" {
					h.Base = href
				}
			}
		}
	}
}
