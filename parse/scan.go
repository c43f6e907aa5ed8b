package parse

import (
	"bytes"
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
