package parse

import (
	"bytes"
	"html"
	"strings"
	"unicode/utf8"
)

// A scanner walks an HTML document from tag to tag as the HTML tokenizer
// (golang.org/x/net/html, which follows the standard's tokenization)
// reads it, and stops only where link extraction looks: at tags. Text
// between tags is skipped with bytes.IndexByte, not read byte by byte;
// comments, doctypes and the raw text of <script>, <style>, <title> and
// the like are stepped over by the tokenizer's own rules, so a link
// inside them is no link, as in a browser; a tag's attributes are read
// (quotes and all, to find where it ends) but decoded only when asked
// for (attr). The tokenizer reads every byte through a method call and
// copies every attribute: alone it cost 157 µs a page of the real site's
// manuals, the scanner 42 (BenchmarkTokenizeManuals, BenchmarkScanManuals).
// scan_test.go holds it to the tokenizer on generated and real pages.
type scanner struct {
	b   []byte
	pos int

	// The tag read last (next):
	end         bool // an end tag (</a>)
	selfClosing bool
	name        []byte // lower-cased, cut at maxTagName bytes (nameBuf)
	nameBuf     [maxTagName]byte
	n           int // attributes kept (the first maxAttrs distinct keys)
	keys, vals  [maxAttrs][]byte
	// text is the raw text after a start tag whose content is text
	// (<title>, <script>, …: rawTextOf), up to its end tag.
	text []byte
}

// maxAttrs bounds the attributes kept of one tag: a hostile tag with
// thousands of them costs no more to read than a normal one.
const maxAttrs = 32

// maxTagName is the longest tag name the scanner tells apart: enough
// for every tag extraction looks for ("plaintext").
const maxTagName = 9

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f'
}

func isLetter(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// next reads up to the next start or end tag; false at the end of the
// document (or inside a tag it ends: the tokenizer drops that tag too).
func (s *scanner) next() bool {
	b := s.b
	for {
		i := bytes.IndexByte(b[s.pos:], '<')
		if i < 0 || s.pos+i+1 >= len(b) {
			return false
		}
		s.pos += i + 1
		switch c := b[s.pos]; {
		case isLetter(c):
			return s.readTag(false)
		case c == '/':
			s.pos++
			if s.pos >= len(b) {
				return false
			}
			switch c := b[s.pos]; {
			case c == '>': // "</>": nothing
				s.pos++
			case isLetter(c):
				return s.readTag(true)
			default: // a bogus comment
				s.untilCloseAngle()
			}
		case c == '!':
			s.pos++
			s.markupDeclaration()
		case c == '?':
			s.untilCloseAngle()
		default:
			// A '<' that starts nothing is text; c is read again.
		}
	}
}

// untilCloseAngle steps past the next '>' (or to the end).
func (s *scanner) untilCloseAngle() {
	if i := bytes.IndexByte(s.b[s.pos:], '>'); i >= 0 {
		s.pos += i + 1
	} else {
		s.pos = len(s.b)
	}
}

// markupDeclaration steps over what follows "<!": a comment, a doctype,
// or a bogus comment (CDATA is one in HTML content).
func (s *scanner) markupDeclaration() {
	b := s.b
	if s.pos+2 <= len(b) && b[s.pos] == '-' && b[s.pos+1] == '-' {
		s.pos += 2
		s.comment()
		return
	}
	if s.pos+2 > len(b) {
		s.pos = len(b)
		return
	}
	// A doctype, or a bogus comment: either ends at the next '>'.
	s.untilCloseAngle()
}

// comment steps over a comment's body (past "<!--") as the tokenizer
// does: "-->", "--!>", and at its very start "<!-->" and "<!--->", end it.
func (s *scanner) comment() {
	b := s.b
	dashes, beginning := 0, true
	for s.pos < len(b) {
		c := b[s.pos]
		s.pos++
		switch c {
		case '-':
			dashes++
			continue
		case '>':
			if dashes >= 2 || beginning {
				return
			}
		case '!':
			if dashes >= 2 {
				if s.pos >= len(b) {
					return
				}
				c = b[s.pos]
				s.pos++
				if c == '>' {
					return
				}
				if c == '-' {
					dashes, beginning = 1, false
					continue
				}
			}
		default:
			// Nothing a comment's end begins with: on to the next '-'
			// or '>' at once.
			if i := bytes.IndexAny(b[s.pos:], "->!"); i >= 0 {
				s.pos += i
			} else {
				s.pos = len(b)
			}
		}
		dashes, beginning = 0, false
	}
}

// skipSpace steps over white space; false at the end.
func (s *scanner) skipSpace() bool {
	for s.pos < len(s.b) {
		if !isSpace(s.b[s.pos]) {
			return true
		}
		s.pos++
	}
	return false
}

// readTag reads a tag from its name's first letter (s.pos) past its '>',
// as the tokenizer's readTag does, keeping the first maxAttrs distinct
// attribute keys with their raw values; then, after a start tag whose
// content is raw text, that text. False: the document ends inside it.
func (s *scanner) readTag(end bool) bool {
	b := s.b
	s.end, s.selfClosing, s.n, s.text = end, false, 0, nil
	// The name: up to white space, '/' or '>'.
	start := s.pos
	s.pos++
	for s.pos < len(b) && !isSpace(b[s.pos]) && b[s.pos] != '/' && b[s.pos] != '>' {
		s.pos++
	}
	if s.pos >= len(b) {
		return false
	}
	s.name = lowerName(b[start:s.pos], &s.nameBuf)
	if !s.skipSpace() {
		return false
	}
	lastVal := -1 // where the last kept attribute's value ends
	for {
		c := b[s.pos]
		s.pos++
		if c == '>' {
			break
		}
		s.pos--
		key, val, valEnd, ok := s.attribute()
		if !ok {
			return false
		}
		if len(key) > 0 && !end && s.newKey(key) {
			if s.n < maxAttrs {
				s.keys[s.n], s.vals[s.n] = key, val
				s.n++
			}
			lastVal = valEnd
		}
		if !s.skipSpace() {
			return false
		}
	}
	if end {
		return true
	}
	// Self-closing: a '/' before the '>' that is not an unquoted
	// value's last byte (<p a=/>).
	s.selfClosing = b[s.pos-2] == '/' && (lastVal < 0 || s.pos-2 != lastVal-1)
	if raw := rawTextOf(s.name); raw != "" {
		s.rawText(raw)
	}
	return true
}

// newKey: no attribute kept so far has key (lower-cased, as the tokenizer
// drops a repeated attribute). Past maxAttrs keys it compares with those.
func (s *scanner) newKey(key []byte) bool {
	for i := 0; i < s.n; i++ {
		if equalFoldASCII(s.keys[i], key) {
			return false
		}
	}
	return true
}

func equalFoldASCII(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// attribute reads one attribute's key and raw value (the tokenizer's
// readTagAttrKey and readTagAttrVal), and where the tokenizer marks its
// value's end (right after the key when it has none); ok false at the
// end of the document.
func (s *scanner) attribute() (key, val []byte, valEnd int, ok bool) {
	b := s.b
	start := s.pos
	for {
		if s.pos >= len(b) {
			return nil, nil, 0, false
		}
		c := b[s.pos]
		s.pos++
		if c == '=' && s.pos == start+1 {
			continue // '=' first is part of the name
		}
		if c == '=' || isSpace(c) || c == '/' || c == '>' {
			s.pos--
			break
		}
	}
	key, valEnd = b[start:s.pos], s.pos
	if !s.skipSpace() {
		return nil, nil, 0, false
	}
	c := b[s.pos]
	s.pos++
	if c == '/' {
		return key, nil, valEnd, true
	}
	if c != '=' {
		s.pos--
		return key, nil, valEnd, true
	}
	if !s.skipSpace() {
		return nil, nil, 0, false
	}
	quote := b[s.pos]
	s.pos++
	switch quote {
	case '>':
		s.pos--
		return key, nil, valEnd, true
	case '\'', '"':
		i := bytes.IndexByte(b[s.pos:], quote)
		if i < 0 {
			return nil, nil, 0, false
		}
		val = b[s.pos : s.pos+i]
		s.pos += i + 1
		return key, val, s.pos - 1, true
	}
	vstart := s.pos - 1
	for s.pos < len(b) {
		c := b[s.pos]
		if isSpace(c) {
			s.pos++
			return key, b[vstart : s.pos-1], s.pos - 1, true
		}
		if c == '>' {
			return key, b[vstart:s.pos], s.pos, true
		}
		s.pos++
	}
	return nil, nil, 0, false
}

// lowerName is name lower-cased in buf, or nil when longer than any
// name the scanner tells apart.
func lowerName(name []byte, buf *[maxTagName]byte) []byte {
	if len(name) > maxTagName {
		return nil
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return buf[:len(name)]
}

// rawTextOf is the tag whose end ends the raw text a start tag named
// name begins ("" for a tag whose content is markup).
func rawTextOf(name []byte) string {
	switch string(name) {
	case "iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "textarea", "title", "xmp":
		return string(name)
	}
	return ""
}

// rawText reads the raw text after the start tag of tag, up to (not past)
// its end tag, into s.text.
func (s *scanner) rawText(tag string) {
	start := s.pos
	switch tag {
	case "plaintext":
		s.pos = len(s.b)
	case "script":
		s.script()
	default:
		for {
			i := bytes.Index(s.b[s.pos:], []byte("</"))
			if i < 0 {
				s.pos = len(s.b)
				break
			}
			s.pos += i
			if s.endTagOf(tag) {
				break
			}
			s.pos += 2
		}
	}
	s.text = s.b[start:s.pos]
}

// endTagOf: s.pos is at "</tag" followed by white space, '/' or '>'.
func (s *scanner) endTagOf(tag string) bool {
	b := s.b[s.pos:]
	if len(b) < len(tag)+3 || b[0] != '<' || b[1] != '/' {
		return false
	}
	for i := 0; i < len(tag); i++ {
		if c := b[2+i]; c != tag[i] && c != tag[i]-('a'-'A') {
			return false
		}
	}
	c := b[2+len(tag)]
	return isSpace(c) || c == '/' || c == '>'
}

// script steps over a script's text to its end tag by the standard's
// rules for "<!--" and "<script" inside it: the tokenizer's readScript,
// state for state.
func (s *scanner) script() {
	b := s.b
	var c byte
	read := func() bool {
		if s.pos >= len(b) {
			return false
		}
		c = b[s.pos]
		s.pos++
		return true
	}
	// endTag: past "</", at "script" and its delimiter: back to the '<'
	// then (true); else past what matched.
	endTag := func() bool {
		s.pos -= 2
		if s.endTagOf("script") {
			return true
		}
		s.pos += 2
		for i := 0; i < len("script") && s.pos < len(b); i++ {
			if c := b[s.pos]; c != "script"[i] && c != "SCRIPT"[i] {
				return false
			}
			s.pos++
		}
		// The name matched, or the document ended: no delimiter followed
		// (it is read again), or nothing did.
		return false
	}

data:
	if i := bytes.IndexByte(b[s.pos:], '<'); i >= 0 {
		s.pos += i + 1
	} else {
		s.pos = len(b)
		return
	}
	// less-than sign
	if !read() {
		return
	}
	switch c {
	case '/':
		if endTag() || s.pos >= len(b) {
			return
		}
		goto data
	case '!':
		if !read() {
			return
		}
		if c != '-' {
			s.pos--
			goto data
		}
		if !read() {
			return
		}
		if c != '-' {
			s.pos--
			goto data
		}
		goto escapedDashDash
	}
	s.pos--
	goto data

escaped:
	if !read() {
		return
	}
	switch c {
	case '-':
		goto escapedDash
	case '<':
		goto escapedLessThan
	}
	goto escaped

escapedDash:
	if !read() {
		return
	}
	switch c {
	case '-':
		goto escapedDashDash
	case '<':
		goto escapedLessThan
	}
	goto escaped

escapedDashDash:
	if !read() {
		return
	}
	switch c {
	case '-':
		goto escapedDashDash
	case '<':
		goto escapedLessThan
	case '>':
		goto data
	}
	goto escaped

escapedLessThan:
	if !read() {
		return
	}
	if c == '/' {
		if endTag() || s.pos >= len(b) {
			return
		}
		goto escaped
	}
	if isLetter(c) {
		s.pos--
		for i := 0; i < len("script"); i++ {
			if !read() {
				return
			}
			if c != "script"[i] && c != "SCRIPT"[i] {
				s.pos--
				goto escaped
			}
		}
		if !read() {
			return
		}
		if isSpace(c) || c == '/' || c == '>' {
			goto doubleEscaped
		}
		s.pos--
		goto escaped
	}
	s.pos--
	goto data

doubleEscaped:
	if !read() {
		return
	}
	switch c {
	case '-':
		goto doubleEscapedDash
	case '<':
		goto doubleEscapedLessThan
	}
	goto doubleEscaped

doubleEscapedDash:
	if !read() {
		return
	}
	switch c {
	case '-':
		goto doubleEscapedDashDash
	case '<':
		goto doubleEscapedLessThan
	}
	goto doubleEscaped

doubleEscapedDashDash:
	if !read() {
		return
	}
	switch c {
	case '-':
		goto doubleEscapedDashDash
	case '<':
		goto doubleEscapedLessThan
	case '>':
		goto data
	}
	goto doubleEscaped

doubleEscapedLessThan:
	if !read() {
		return
	}
	if c != '/' {
		s.pos--
		goto doubleEscaped
	}
	if endTag() {
		s.pos += len("</script>")
		goto escaped
	}
	if s.pos >= len(b) {
		return
	}
	goto doubleEscaped
}

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
