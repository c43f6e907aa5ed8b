package neardup

import (
	"bytes"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skipped are the elements whose text is not a page's own: scripts and
// styles, and the parts HTML names as a site's furniture (navigation,
// header, footer, asides, forms).
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Nav: true, atom.Header: true, atom.Footer: true, atom.Aside: true, atom.Form: true,
	atom.Select: true, atom.Button: true,
}

// Words are the words of a page's main text, lower case: its text
// outside the skipped elements and outside links (a list of links, a
// menu or "related articles", is the site's, not the page's), split at
// anything that is not a letter or a digit.
func Words(page []byte) []string {
	z := html.NewTokenizer(bytes.NewReader(page))
	var words []string
	depth, links := 0, 0 // inside skipped elements, inside links
	for {
		switch z.Next() {
		case html.ErrorToken:
			return words
		case html.StartTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case skipped[a]:
				depth++
			case a == atom.A:
				links++
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			switch {
			case skipped[a] && depth > 0:
				depth--
			case a == atom.A && links > 0:
				links--
			}
		case html.TextToken:
			if depth == 0 && links == 0 {
				words = appendWords(words, string(z.Text()))
			}
		}
	}
}

// appendWords appends the words of text, lower case.
func appendWords(words []string, text string) []string {
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		words = append(words, strings.ToLower(w))
	}
	return words
}
