package parse

import (
	"fmt"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"github.com/andybalholm/cascadia"
)

// Field is a named CSS selector: the text of its first match on a page
// goes into the page's record (crawler seed --extract NAME=CSS).
type Field struct {
	Name string
	CSS  string
	sel  cascadia.Selector
}

// maxFieldText bounds what one field keeps of a page.
const maxFieldText = 4096

// CompileField checks a field's name (letters, digits, '_' and '-') and
// compiles its selector.
func CompileField(name, css string) (Field, error) {
	if name == "" || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) >= 0 {
		return Field{}, fmt.Errorf("parse: field name %q: want letters, digits, '_' and '-'", name)
	}
	sel, err := cascadia.Compile(css)
	if err != nil {
		return Field{}, fmt.Errorf("parse: field %s: selector %q: %v", name, css, err)
	}
	return Field{Name: name, CSS: css, sel: sel}, nil
}

// fields reads the fields off a parsed document: each one's first match,
// its text with white space collapsed, cut at maxFieldText bytes. A field
// that matches nothing is left out.
func fields(doc *goquery.Document, fs []Field) map[string]string {
	if len(fs) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, f := range fs {
		m := doc.FindMatcher(f.sel).First()
		if m.Length() == 0 {
			continue
		}
		text := strings.Join(strings.Fields(m.Text()), " ")
		if len(text) > maxFieldText {
			text = strings.ToValidUTF8(text[:maxFieldText], "")
		}
		out[f.Name] = text
	}
	return out
}
