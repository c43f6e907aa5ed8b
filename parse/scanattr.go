package parse

import (
	"bytes"
	"html"
	"strings"
	"unicode/utf8"
)

// What a tag's attributes and a title say, decoded as the tokenizer
// decodes them; the scanner decodes only what extraction asks for.

// attr is the decoded value of the tag's attribute key (lower-case), or
// def when it has none.
func (s *scanner) attr(key, def string) string {
	for i := 0; i < s.n; i++ {
		if equalFoldASCII(s.keys[i], []byte(key)) {
			return attrValue(s.vals[i])
		}
	}
	return def
}

// attrValue decodes a raw attribute value as the tokenizer's TagAttr
// does: NUL is U+FFFD, "\r\n" and "\r" are "\n", and character
// references are decoded as an attribute's are (a named one without ';'
// only when it is one whole, and not before '=': "?a=1&copy=2" stays).
func attrValue(raw []byte) string {
	if bytes.IndexByte(raw, 0) < 0 && bytes.IndexByte(raw, '\r') < 0 && bytes.IndexByte(raw, '&') < 0 {
		return string(raw)
	}
	v := string(raw)
	v = strings.ReplaceAll(v, "\x00", "\uFFFD")
	v = strings.ReplaceAll(v, "\r\n", "\n")
	v = strings.ReplaceAll(v, "\r", "\n")
	if !strings.Contains(v, "&") {
		return v
	}
	var out strings.Builder
	out.Grow(len(v))
	for i := 0; i < len(v); {
		j := strings.IndexByte(v[i:], '&')
		if j < 0 {
			out.WriteString(v[i:])
			break
		}
		out.WriteString(v[i : i+j])
		i += j
		n, text := attrReference(v[i:])
		out.WriteString(text)
		i += n
	}
	return out.String()
}

// attrReference reads the character reference s begins with ('&'), in
// an attribute: how many bytes it takes and what they stand for.
func attrReference(s string) (int, string) {
	if len(s) < 2 {
		return 1, "&"
	}
	i := 1
	if s[1] == '#' {
		i = 2
		hex := i < len(s) && (s[i] == 'x' || s[i] == 'X')
		if hex {
			i++
		}
		d := i
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || hex && (s[i] >= 'a' && s[i] <= 'f' || s[i] >= 'A' && s[i] <= 'F')) {
			i++
		}
		if i == d {
			return 1, "&"
		}
		if i < len(s) && s[i] == ';' {
			i++
		}
		return i, html.UnescapeString(s[:i]) // a number reads alike in text and attributes
	}
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
		i++
	}
	semi := i < len(s) && s[i] == ';'
	if semi {
		i++
	}
	if i == 1 || !semi && i < len(s) && s[i] == '=' {
		return 1, "&"
	}
	// html.UnescapeString reads text, where a name may also be a known
	// one's prefix ("&copyx" is "©x"); an attribute takes only a whole
	// name. A prefix's reading ends in the rest of the name, letters or
	// digits (and the ';'): a whole name's never does (no reference
	// stands for an ASCII letter or digit but &fjlig;, which has its ';').
	ref := s[:i]
	text := html.UnescapeString(ref)
	if text == ref {
		return 1, "&"
	}
	last := text[len(text)-1]
	if semi {
		if last != ';' || len(text) < 2 {
			return i, text
		}
		last = text[len(text)-2]
	}
	if last < utf8.RuneSelf && (last >= 'a' && last <= 'z' || last >= 'A' && last <= 'Z' || last >= '0' && last <= '9') {
		return 1, "&"
	}
	return i, text
}

// rawTextValue is a title's text as the tokenizer gives it: NUL is
// U+FFFD, "\r\n" and "\r" are "\n", character references decoded.
func rawTextValue(raw []byte) string {
	v := string(raw)
	if bytes.IndexByte(raw, 0) >= 0 {
		v = strings.ReplaceAll(v, "\x00", "\uFFFD")
	}
	if bytes.IndexByte(raw, '\r') >= 0 {
		v = strings.ReplaceAll(strings.ReplaceAll(v, "\r\n", "\n"), "\r", "\n")
	}
	return html.UnescapeString(v)
}
