package parse

import "strings"

// LinkTargets are the targets (as written between < and >) of the links
// in Link header values (RFC 8288, section 3) whose rel parameter names
// rel among its space-separated relation types, compared without case,
// in the order sent. A link that does not parse is skipped up to the next
// comma outside its <…> and quoted strings; the rest are still read.
//
// No module the crawl may use parses Link headers (the Go module proxy
// serves none made for it), and the grammar is small: link-value =
// "<" URI-Reference ">" *( OWS ";" OWS link-param ), link-param = token
// BWS [ "=" BWS ( token / quoted-string ) ].
func LinkTargets(values []string, rel string) []string {
	var out []string
	for _, v := range values {
		for s := v; s != ""; {
			var target string
			var rels []string
			var ok bool
			target, rels, s, ok = linkValue(s)
			if !ok {
				continue
			}
			for _, r := range rels {
				if strings.EqualFold(r, rel) {
					out = append(out, target)
					break
				}
			}
		}
	}
	return out
}

// linkValue reads one link-value off the front of s (after any blanks and
// commas): its target and relation types, what is left after it, and
// whether it parsed.
func linkValue(s string) (target string, rels []string, rest string, ok bool) {
	s = strings.TrimLeft(s, " \t,")
	if s == "" {
		return "", nil, "", false
	}
	if s[0] != '<' {
		return "", nil, skipLink(s), false
	}
	end := strings.IndexByte(s, '>')
	if end < 0 {
		return "", nil, "", false
	}
	target, s = strings.TrimSpace(s[1:end]), s[end+1:]
	sawRel := false
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" || s[0] == ',' {
			return target, rels, s, true
		}
		if s[0] != ';' {
			return "", nil, skipLink(s), false
		}
		var name, value string
		name, value, s = linkParam(s[1:])
		// The first rel parameter counts; a repeated one is ignored (RFC 8288, 3.3).
		if strings.EqualFold(name, "rel") && !sawRel {
			sawRel, rels = true, strings.Fields(value)
		}
	}
}

// linkParam reads name[=value] off the front of s (after its ';'), the
// value unquoted, and returns what follows it.
func linkParam(s string) (name, value, rest string) {
	s = strings.TrimLeft(s, " \t")
	i := strings.IndexAny(s, "=;,")
	if i < 0 {
		return strings.TrimSpace(s), "", ""
	}
	name = strings.TrimSpace(s[:i])
	if s[i] != '=' {
		return name, "", s[i:]
	}
	s = strings.TrimLeft(s[i+1:], " \t")
	if s != "" && s[0] == '"' {
		var b strings.Builder
		for j := 1; j < len(s); j++ {
			switch c := s[j]; {
			case c == '\\' && j+1 < len(s):
				j++
				b.WriteByte(s[j])
			case c == '"':
				return name, b.String(), s[j+1:]
			default:
				b.WriteByte(c)
			}
		}
		return name, b.String(), "" // an unclosed quote runs to the end
	}
	j := strings.IndexAny(s, ";,")
	if j < 0 {
		return name, strings.TrimSpace(s), ""
	}
	return name, strings.TrimSpace(s[:j]), s[j:]
}

// skipLink skips a link that does not parse: up to the next comma outside
// <…> and quoted strings.
func skipLink(s string) string {
	inQuote, inAngle := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"' && !inAngle:
			inQuote = !inQuote
		case c == '<' && !inQuote:
			inAngle = true
		case c == '>' && !inQuote:
			inAngle = false
		case c == ',' && !inQuote && !inAngle:
			return s[i+1:]
		}
	}
	return ""
}
