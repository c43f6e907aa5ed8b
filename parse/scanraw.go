package parse

import "bytes"

// The raw text of <script>, <style>, <title>, <textarea> and the like:
// text to the scanner, up to its own end tag, whatever tags it holds.

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

// scriptState is where script() is in a script's text: the standard's
// script data states, past the ones that only look ahead.
type scriptState int

const (
	scriptData scriptState = iota
	scriptEscaped
	scriptEscapedDash
	scriptEscapedDashDash
	scriptDouble // double escaped: "<!--<script>" inside a script
	scriptDoubleDash
	scriptDoubleDashDash
)

// script steps over a script's text to its end tag by the standard's
// rules for "<!--" and "<script" inside it: the tokenizer's readScript,
// state for state (its gotos are the states here, and the steps below).
// A step returns the next state, or false where the text ends: at
// "</script" and its delimiter (s.pos at its '<'), or at the end.
func (s *scanner) script() {
	st, more := scriptData, true
	for more {
		switch st {
		case scriptData:
			st, more = s.scriptData()
		case scriptEscaped, scriptEscapedDash, scriptEscapedDashDash:
			st, more = s.scriptEscaped(st)
		default:
			st, more = s.scriptDouble(st)
		}
	}
}

// read is the next byte, stepped past; false at the end.
func (s *scanner) read() (byte, bool) {
	if s.pos >= len(s.b) {
		return 0, false
	}
	s.pos++
	return s.b[s.pos-1], true
}

// scriptData: up to a '<', then what it may start (the tokenizer's
// scriptData, LessThanSign, EndTagOpen, EscapeStart and EscapeStartDash).
func (s *scanner) scriptData() (scriptState, bool) {
	i := bytes.IndexByte(s.b[s.pos:], '<')
	if i < 0 {
		s.pos = len(s.b)
		return 0, false
	}
	s.pos += i + 1
	c, ok := s.read()
	if !ok {
		return 0, false
	}
	switch c {
	case '/':
		return scriptData, !s.scriptEndTag() && s.pos < len(s.b)
	case '!': // "<!--" escapes; anything else is read again as data
		for range 2 {
			if c, ok := s.read(); !ok {
				return 0, false
			} else if c != '-' {
				s.pos--
				return scriptData, true
			}
		}
		return scriptEscapedDashDash, true
	}
	s.pos--
	return scriptData, true
}

// scriptEscaped is a byte of escaped text ("<!--" seen): "-->" goes back
// to data, '<' may start "</script" or "<script".
func (s *scanner) scriptEscaped(st scriptState) (scriptState, bool) {
	c, ok := s.read()
	switch {
	case !ok:
		return 0, false
	case c == '-' && st == scriptEscaped:
		return scriptEscapedDash, true
	case c == '-':
		return scriptEscapedDashDash, true
	case c == '<':
		return s.scriptEscapedLessThan()
	case c == '>' && st == scriptEscapedDashDash:
		return scriptData, true
	}
	return scriptEscaped, true
}

// scriptEscapedLessThan: past a '<' in escaped text.
func (s *scanner) scriptEscapedLessThan() (scriptState, bool) {
	c, ok := s.read()
	switch {
	case !ok:
		return 0, false
	case c == '/':
		return scriptEscaped, !s.scriptEndTag() && s.pos < len(s.b)
	case !isLetter(c):
		s.pos--
		return scriptData, true // as the tokenizer has it (the standard says escaped)
	}
	s.pos--
	for i := 0; i < len("script"); i++ {
		if c, ok := s.read(); !ok {
			return 0, false
		} else if c != "script"[i] && c != "SCRIPT"[i] {
			s.pos--
			return scriptEscaped, true
		}
	}
	c, ok = s.read()
	switch {
	case !ok:
		return 0, false
	case isSpace(c) || c == '/' || c == '>':
		return scriptDouble, true
	}
	s.pos--
	return scriptEscaped, true
}

// scriptDouble is a byte of double-escaped text: "</script" goes back to
// escaped text (past it), "-->" to data.
func (s *scanner) scriptDouble(st scriptState) (scriptState, bool) {
	c, ok := s.read()
	switch {
	case !ok:
		return 0, false
	case c == '-' && st == scriptDouble:
		return scriptDoubleDash, true
	case c == '-':
		return scriptDoubleDashDash, true
	case c == '>' && st == scriptDoubleDashDash:
		return scriptData, true
	case c != '<':
		return scriptDouble, true
	}
	if c, ok = s.read(); !ok {
		return 0, false
	} else if c != '/' {
		s.pos--
		return scriptDouble, true
	}
	if s.scriptEndTag() {
		s.pos += len("</script>")
		return scriptEscaped, true
	}
	return scriptDouble, s.pos < len(s.b)
}

// scriptEndTag: past "</", at "script" and its delimiter: back to the '<'
// (true); else past what matched of "script" (the byte that did not match
// is read again), or at the end (the tokenizer's readRawEndTag).
func (s *scanner) scriptEndTag() bool {
	s.pos -= 2
	if s.endTagOf("script") {
		return true
	}
	s.pos += 2
	for i := 0; i < len("script") && s.pos < len(s.b); i++ {
		if c := s.b[s.pos]; c != "script"[i] && c != "SCRIPT"[i] {
			return false
		}
		s.pos++
	}
	return false
}
