package parse

import (
	"strings"
	"time"
)

// Robots are what a page's owner says of it for crawlers, in X-Robots-Tag
// response headers and robots meta tags (Google's and Bing's documented
// directives; RFC 9309 covers robots.txt only): whether its links may be
// followed, and what a search or archive downstream may do with it.
type Robots struct {
	NoIndex, NoFollow, NoArchive, NoSnippet bool
	// UnavailableAfter is the date after which the page is not to be
	// shown (zero: none, or one that did not parse).
	UnavailableAfter time.Time
}

// Words are the directives in force, for a record: noindex, nofollow,
// noarchive, nosnippet, and unavailable_after=RFC3339.
func (r Robots) Words() []string {
	var out []string
	for _, w := range []struct {
		on   bool
		word string
	}{{r.NoIndex, "noindex"}, {r.NoFollow, "nofollow"}, {r.NoArchive, "noarchive"}, {r.NoSnippet, "nosnippet"}} {
		if w.on {
			out = append(out, w.word)
		}
	}
	if !r.UnavailableAfter.IsZero() {
		out = append(out, "unavailable_after="+r.UnavailableAfter.UTC().Format(time.RFC3339))
	}
	return out
}

// Merge adds what o says to r (a directive said anywhere holds).
func (r *Robots) Merge(o Robots) {
	r.NoIndex = r.NoIndex || o.NoIndex
	r.NoFollow = r.NoFollow || o.NoFollow
	r.NoArchive = r.NoArchive || o.NoArchive
	r.NoSnippet = r.NoSnippet || o.NoSnippet
	if !o.UnavailableAfter.IsZero() && (r.UnavailableAfter.IsZero() || o.UnavailableAfter.Before(r.UnavailableAfter)) {
		r.UnavailableAfter = o.UnavailableAfter
	}
}

// knownDirectives are the words a directive list may hold: a word before
// a colon that is not one of them names a crawler ("googlebot: noindex").
var knownDirectives = map[string]bool{"all": true, "noindex": true, "index": true, "nofollow": true, "follow": true, "none": true,
	"noarchive": true, "nocache": true, "nosnippet": true, "notranslate": true, "noimageindex": true, "unavailable_after": true,
	"max-snippet": true, "max-image-preview": true, "max-video-preview": true, "indexifembedded": true, "noodp": true, "noydir": true}

// XRobotsTag reads a response's X-Robots-Tag headers (each value as sent;
// a header may hold a comma-separated list, and a response several
// headers) for the crawler whose product token is agent: the directives
// addressed to no crawler, and those addressed to agent ("redcrawl:
// nofollow", compared without case); those addressed to another crawler
// are not its.
func XRobotsTag(values []string, agent string) Robots {
	var r Robots
	for _, v := range values {
		v = strings.TrimSpace(v)
		// "name: directives": a crawler's name unless the word is a
		// directive's (unavailable_after: DATE).
		if name, rest, ok := strings.Cut(v, ":"); ok {
			n := strings.ToLower(strings.TrimSpace(name))
			if !knownDirectives[n] && !strings.ContainsAny(n, " ,") {
				if !strings.EqualFold(n, agent) {
					continue
				}
				v = rest
			}
		}
		r.Merge(Directives(v))
	}
	return r
}

// Directives reads one list of robots directives ("noindex, nofollow",
// "none", "unavailable_after: 25 Jun 2030 15:00:00 GMT"): commas or
// spaces between words, without case; words it does not know are
// skipped.
func Directives(list string) Robots {
	var r Robots
	parts := strings.Split(list, ",")
	for i := 0; i < len(parts); i++ {
		words := strings.Fields(parts[i])
		for k, w := range words {
			lw := strings.ToLower(w)
			switch {
			case lw == "noindex":
				r.NoIndex = true
			case lw == "nofollow":
				r.NoFollow = true
			case lw == "none":
				r.NoIndex, r.NoFollow = true, true
			case lw == "noarchive" || lw == "nocache":
				r.NoArchive = true
			case lw == "nosnippet":
				r.NoSnippet = true
			case strings.HasPrefix(lw, "unavailable_after"):
				// Its date is the rest of the list up to the next part that
				// begins with a directive (a date may hold a comma:
				// "Saturday, 01-Jul-30 15:00:00 GMT").
				date := strings.Join(append([]string{w[len("unavailable_after"):]}, words[k+1:]...), " ")
				for i+1 < len(parts) && !startsWithDirective(parts[i+1]) {
					i++
					date += "," + parts[i]
				}
				if t, ok := parseRobotsDate(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(date), ":"))); ok {
					r.UnavailableAfter = t
				}
				words = nil // the rest of this part was the date
			}
			if words == nil {
				break
			}
		}
	}
	return r
}

// startsWithDirective: part's first word is a directive's.
func startsWithDirective(part string) bool {
	f := strings.Fields(part)
	if len(f) == 0 {
		return false
	}
	k, _, _ := strings.Cut(strings.ToLower(f[0]), ":")
	return knownDirectives[k]
}

// robotsDateLayouts are the forms unavailable_after is written in: the
// widely adopted date formats Google names (RFC 822, RFC 850, ISO 8601).
var robotsDateLayouts = []string{time.RFC1123, time.RFC1123Z, time.RFC822, time.RFC822Z, time.RFC850, time.RFC3339,
	"2006-01-02", "2006-01-02T15:04:05", "2 Jan 2006 15:04:05 MST", "02 Jan 2006 15:04:05 MST", "2-Jan-2006 15:04:05 MST",
	"Monday, 02-Jan-06 15:04:05 MST", "Mon, 2 Jan 2006 15:04:05 MST", time.ANSIC}

func parseRobotsDate(s string) (time.Time, bool) {
	for _, l := range robotsDateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// metaRobots reads a <meta name content> for the crawler whose product
// token is agent: name "robots" (every crawler's) or agent's own.
func metaRobots(name, content, agent string) (Robots, bool) {
	n := strings.TrimSpace(name)
	if !strings.EqualFold(n, "robots") && (agent == "" || !strings.EqualFold(n, agent)) {
		return Robots{}, false
	}
	return Directives(content), true
}
