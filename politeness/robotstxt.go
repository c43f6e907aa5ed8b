package politeness

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// RobotsTxt is a robots.txt as RFC 9309 reads it. It is our own parser
// and matcher: no maintained Go library implements RFC 9309 with Google's
// reference behaviour (temoto/robotstxt, used before, refuses a whole file
// over one line it does not understand, lets the first of two equally long
// rules win, and compares paths unnormalized; the Go port of Google's
// parser is not served here). It is small and its tests carry Google's
// reference cases.
//
// What it does, by the RFC:
//   - a line it does not understand is skipped, never the file: a rule or
//     Crawl-delay before any User-agent, an unknown key, a line without a
//     colon (but for one of exactly two words, "disallow /", read as
//     Google's parser reads it: the colon forgotten), a bad Crawl-delay;
//   - '#' starts a comment wherever it stands;
//   - a group is one or more User-agent lines and the rules after them;
//     the groups naming the crawler's product token (compared without
//     case, as the leading run of letters, '_' and '-' of the line's value)
//     are merged, else those of '*', else nothing applies;
//   - the longest matching rule, in octets of its pattern, wins; of equally
//     long ones, Allow; '*' matches any run of characters and a final '$'
//     the end of the path; /robots.txt is always allowed;
//   - rules and paths are compared percent-normalized alike (see normPath).
//
// And beyond it: Crawl-delay (seconds, fractions allowed) is read in its
// group, capped at MaxCrawlDelay; Sitemap lines are collected wherever
// they stand.
type RobotsTxt struct {
	groups []robotsGroup
	// Sitemaps are the Sitemap lines' values, in order.
	Sitemaps []string
	// verdict, when not 0, answers every path: 1 allowed (a 4xx answer),
	// -1 disallowed (no usable answer).
	verdict int
}

type robotsGroup struct {
	agents []string // product tokens, lower-cased; "*" for every crawler
	rules  []robotsRule
	delay  time.Duration
	hasDel bool
}

type robotsRule struct {
	allow   bool
	pattern string // normalized (normPath)
}

// MaxCrawlDelay caps a robots.txt's Crawl-delay: a host asking for more
// (86400 is seen) gets one request this often, not one a day.
const MaxCrawlDelay = 60 * time.Second

// RobotsFromStatus reads a robots.txt answer: a 2xx's body is parsed; a
// 4xx (RFC 9309 §2.3.1.3: "unavailable") allows everything; anything else
// that reaches here (a 3xx left after the redirects) disallows everything
// until the next fetch. (5xx and 429 never reach a parse: the Robots cache
// keeps them as unavailable, and backs off.)
func RobotsFromStatus(status int, body []byte) *RobotsTxt {
	switch {
	case status >= 200 && status < 300:
		return ParseRobotsTxt(body)
	case status >= 400 && status < 500:
		return &RobotsTxt{verdict: 1}
	default:
		return &RobotsTxt{verdict: -1}
	}
}

// ParseRobotsTxt parses a robots.txt body. It never fails: what it does
// not understand it skips.
func ParseRobotsTxt(body []byte) *RobotsTxt {
	r := &RobotsTxt{}
	for _, bom := range [][]byte{{0xEF, 0xBB, 0xBF}, {0xEF, 0xBB}, {0xEF}} {
		if bytes.HasPrefix(body, bom) {
			body = body[len(bom):]
			break
		}
	}
	var cur *robotsGroup // the group being read; nil before the first User-agent
	inRules := false     // cur has had a rule line: a User-agent line starts a new group
	for len(body) > 0 {
		// Lines end in LF, CR LF or CR.
		line := body
		if i := bytes.IndexAny(body, "\r\n"); i >= 0 {
			crlf := body[i] == '\r' && i+1 < len(body) && body[i+1] == '\n'
			line, body = body[:i], body[i+1:]
			if crlf {
				body = body[1:]
			}
		} else {
			body = nil
		}
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		key, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			// As Google reads it: a line of exactly two words, the colon
			// forgotten ("disallow /"), is a key and its value.
			if key, value, ok = cutTwoWords(line); !ok {
				continue
			}
		}
		k := strings.ToLower(string(bytes.TrimSpace(key)))
		v := string(bytes.TrimSpace(value))
		switch k {
		case "user-agent", "useragent", "user agent":
			if cur == nil || inRules {
				r.groups = append(r.groups, robotsGroup{})
				cur, inRules = &r.groups[len(r.groups)-1], false
			}
			cur.agents = append(cur.agents, productToken(v))
		case "allow", "disallow":
			if cur == nil {
				continue // a rule outside any group applies to no one
			}
			inRules = true
			if v != "" { // an empty rule matches nothing
				cur.rules = append(cur.rules, robotsRule{allow: k == "allow", pattern: normPath(v)})
			}
		case "crawl-delay":
			if cur == nil {
				continue
			}
			inRules = true
			if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && !math.IsInf(s, 0) {
				cur.delay, cur.hasDel = MaxCrawlDelay+time.Nanosecond, true // over the cap: CrawlDelay says so
				if s <= MaxCrawlDelay.Seconds() {
					cur.delay = time.Duration(s * float64(time.Second))
				}
			}
		case "sitemap":
			if v != "" {
				r.Sitemaps = append(r.Sitemaps, v)
			}
		}
	}
	return r
}

// cutTwoWords splits a line of exactly two runs of non-blank characters
// (spaces, tabs) into them; ok is false for any other line.
func cutTwoWords(line []byte) (key, value []byte, ok bool) {
	t := bytes.Trim(line, " \t")
	i := bytes.IndexAny(t, " \t")
	if i < 0 {
		return nil, nil, false
	}
	key, value = t[:i], bytes.TrimLeft(t[i:], " \t")
	if bytes.ContainsAny(value, " \t") {
		return nil, nil, false
	}
	return key, value, true
}

// productToken is a User-agent line's value as RFC 9309 matches it: "*",
// or its leading run of letters, '_' and '-', lower-cased.
func productToken(v string) string {
	if strings.HasPrefix(v, "*") {
		return "*"
	}
	n := 0
	for n < len(v) && (v[n] >= 'a' && v[n] <= 'z' || v[n] >= 'A' && v[n] <= 'Z' || v[n] == '_' || v[n] == '-') {
		n++
	}
	return strings.ToLower(v[:n])
}

// rulesFor merges the groups that apply to agent (a product token): those
// naming it, else those of '*'.
func (r *RobotsTxt) rulesFor(agent string) (rules []robotsRule, delay time.Duration, hasDelay bool) {
	agent = strings.ToLower(agent)
	for _, want := range []string{agent, "*"} {
		found := false
		for _, g := range r.groups {
			for _, a := range g.agents {
				if a == want && a != "" {
					found = true
					rules = append(rules, g.rules...)
					if g.hasDel && !hasDelay {
						delay, hasDelay = g.delay, true
					}
					break
				}
			}
		}
		if found {
			return rules, delay, hasDelay
		}
	}
	return nil, 0, false
}

// Allowed reports whether agent (a product token) may fetch path: the
// URL's escaped path, and its query after '?'.
func (r *RobotsTxt) Allowed(agent, path string) bool {
	switch {
	case r.verdict != 0:
		return r.verdict > 0
	case path == "/robots.txt":
		return true
	}
	rules, _, _ := r.rulesFor(agent)
	path = normPath(path)
	best, allowed := -1, true
	for _, rule := range rules {
		if n := len(rule.pattern); n >= best && matches(rule.pattern, path) {
			if n > best || rule.allow {
				allowed = rule.allow
			}
			best = n
		}
	}
	return allowed
}

// CrawlDelay is agent's Crawl-delay (0 if none), and whether the file
// asked for more than MaxCrawlDelay, to which it is cut.
func (r *RobotsTxt) CrawlDelay(agent string) (d time.Duration, capped bool) {
	_, d, _ = r.rulesFor(agent)
	if d > MaxCrawlDelay {
		return MaxCrawlDelay, true
	}
	return d, false
}

// matches reports whether pattern matches a prefix of path ('*': any run
// of characters; a final '$': the end of path).
func matches(pattern, path string) bool {
	anchored := strings.HasSuffix(pattern, "$")
	if anchored {
		pattern = pattern[:len(pattern)-1]
	}
	// Greedy wildcard matching with one backtrack point: the last '*'.
	p, s, star, mark := 0, 0, -1, 0
	for s < len(path) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, s
			p++
		case p < len(pattern) && pattern[p] == path[s]:
			p++
			s++
		case p == len(pattern) && !anchored:
			return true // the pattern is a prefix of what is left
		case star >= 0:
			p, mark = star+1, mark+1
			s = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// normPath percent-normalizes a path or a rule's pattern, so that the two
// compare as URLs do: an escaped unreserved character is decoded (%7E is
// ~, %62 is b: the crawler's canonical URLs decode them too), other
// escapes get upper-case hex (%3c is %3C), and bytes outside printable
// US-ASCII are escaped (ツ is %E3%83%84).
func normPath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && hexByte(s[i+1:i+3]) >= 0:
			if v := byte(hexByte(s[i+1 : i+3])); unreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteString(strings.ToUpper(s[i+1 : i+3]))
			}
			i += 2
		case c <= ' ' || c >= 0x7F:
			b.WriteString("%" + strings.ToUpper(strconv.FormatUint(uint64(c)|0x100, 16)[1:]))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// hexByte is the byte two hex digits spell, or -1.
func hexByte(h string) int {
	v, err := strconv.ParseUint(h, 16, 8) // base 16: no sign, no '_', no 0x
	if err != nil {
		return -1
	}
	return int(v)
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// For is r as agent reads it, and all a crawl need keep of it: the rules
// of the groups that apply to agent, merged, and its Crawl-delay; not the
// other agents' groups, and not the sitemaps (they are queued when the
// file is fetched: Robots.OnFetched). A 500 KiB robots.txt written for a
// hundred crawlers keeps a few lines. Allowed and CrawlDelay answer for
// agent as r's would.
func (r *RobotsTxt) For(agent string) *RobotsTxt {
	if r.verdict != 0 {
		return &RobotsTxt{verdict: r.verdict}
	}
	rules, delay, has := r.rulesFor(agent)
	return &RobotsTxt{groups: []robotsGroup{{agents: []string{strings.ToLower(agent)}, rules: rules, delay: delay, hasDel: has}}}
}

// compact writes r, as For leaves it, as text (a line a rule: "A pattern"
// or "D pattern", "C nanoseconds" for a Crawl-delay, "V verdict"): what
// Redis keeps of a host's robots.txt. Patterns hold no line breaks
// (normPath escapes them).
func (r *RobotsTxt) compact() []byte {
	var b bytes.Buffer
	if r.verdict != 0 {
		fmt.Fprintf(&b, "V %d\n", r.verdict)
		return b.Bytes()
	}
	for _, g := range r.groups {
		if g.hasDel {
			fmt.Fprintf(&b, "C %d\n", int64(g.delay))
		}
		for _, rule := range g.rules {
			kind := byte('D')
			if rule.allow {
				kind = 'A'
			}
			b.WriteByte(kind)
			b.WriteByte(' ')
			b.WriteString(rule.pattern)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// fromCompact reads compact's text back, as the rules of agent.
func fromCompact(agent string, text []byte) *RobotsTxt {
	g := robotsGroup{agents: []string{strings.ToLower(agent)}}
	for _, line := range strings.Split(string(text), "\n") {
		if len(line) < 2 || line[1] != ' ' {
			continue
		}
		v := line[2:]
		switch line[0] {
		case 'V':
			n, _ := strconv.Atoi(v)
			return &RobotsTxt{verdict: n}
		case 'C':
			n, _ := strconv.ParseInt(v, 10, 64)
			g.delay, g.hasDel = time.Duration(n), true
		case 'A', 'D':
			g.rules = append(g.rules, robotsRule{allow: line[0] == 'A', pattern: v})
		}
	}
	return &RobotsTxt{groups: []robotsGroup{g}}
}

// size is about how many bytes of memory r holds.
func (r *RobotsTxt) size() int {
	n := 64
	for _, g := range r.groups {
		n += 64
		for _, a := range g.agents {
			n += len(a) + 16
		}
		for _, rule := range g.rules {
			n += len(rule.pattern) + 32
		}
	}
	for _, s := range r.Sitemaps {
		n += len(s) + 16
	}
	return n
}
