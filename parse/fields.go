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
	// Attr, when set, is the attribute read off a match (href, src,
	// content …) instead of its text.
	Attr string
	// All keeps every match, in document order (a list), instead of the
	// first (a string).
	All bool
	sel cascadia.Selector
}

// maxFieldText bounds what one value of a field keeps; maxFieldItems the
// matches a field of All keeps.
const (
	maxFieldText  = 4096
	maxFieldItems = 100
)

// ParseField reads an extract rule: NAME=CSS (the text of the selector's
// first match), NAME=CSS@ATTR (its attribute ATTR), and NAME[]=CSS or
// NAME[]=CSS@ATTR (every match's, a list).
func ParseField(rule string) (Field, error) {
	name, css, ok := strings.Cut(rule, "=")
	if !ok {
		return Field{}, fmt.Errorf("parse: extract rule %q: want NAME=CSS, NAME=CSS@ATTR, NAME[]=CSS or NAME[]=CSS@ATTR", rule)
	}
	name, css = strings.TrimSpace(name), strings.TrimSpace(css)
	all := strings.HasSuffix(name, "[]")
	name = strings.TrimSuffix(name, "[]")
	var attr string
	if i := strings.LastIndexByte(css, '@'); i >= 0 && attrName(css[i+1:]) {
		css, attr = strings.TrimSpace(css[:i]), strings.ToLower(css[i+1:])
	}
	f, err := CompileField(name, css)
	f.Attr, f.All = attr, all
	return f, err
}

// attrName: s is an HTML attribute's name (so that a selector's own '@',
// inside [href*="@"], is not read as one).
func attrName(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == ':')
	}) < 0
}

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

// fields reads the fields off a parsed document: each one's first match
// (a string) or, for All, every match up to maxFieldItems (a list); a
// match's text with white space collapsed, or its attribute Attr as
// written; each value cut at maxFieldText bytes. A field that matches
// nothing (or whose matches lack its attribute) is left out.
func fields(doc *goquery.Document, fs []Field) map[string]any {
	if len(fs) == 0 {
		return nil
	}
	out := map[string]any{}
	for _, f := range fs {
		var vals []string
		doc.FindMatcher(f.sel).EachWithBreak(func(_ int, m *goquery.Selection) bool {
			v, ok := value(m, f.Attr)
			if ok {
				vals = append(vals, v)
			}
			return f.All && len(vals) < maxFieldItems || !f.All && len(vals) == 0
		})
		switch {
		case len(vals) == 0:
		case f.All:
			out[f.Name] = vals
		default:
			out[f.Name] = vals[0]
		}
	}
	return out
}

// value is a match's text, or its attribute attr; false when it has not
// that attribute.
func value(m *goquery.Selection, attr string) (string, bool) {
	var v string
	if attr == "" {
		v = strings.Join(strings.Fields(m.Text()), " ")
	} else {
		a, ok := m.Attr(attr)
		if !ok {
			return "", false
		}
		v = strings.TrimSpace(a)
	}
	if len(v) > maxFieldText {
		v = strings.ToValidUTF8(v[:maxFieldText], "")
	}
	return v, true
}
