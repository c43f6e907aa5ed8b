package parse

import (
	"fmt"
	"net/url"
	"strings"

	wurl "github.com/nlnwa/whatwg-url/url"
)

// whatwg resolves references as browsers do (the WHATWG URL standard):
// '\\' as '/' in http(s) URLs, "///x" and "http:x" against their base,
// ports with leading zeros, IPv4 addresses in every numeric form, hosts
// that are no host refused. Canonicalize's normalizations come after.
var whatwg = wurl.NewParser()

// resolve resolves ref against base as a browser does, and returns the
// http(s) URL it names, fragment dropped. A plain link (plainRef) takes
// net/url's path, which answers as the standard does for those and costs a
// third (FuzzPlainRefsResolveAsTheStandard holds it to that); every other
// goes through the standard's parser.
func resolve(base *url.URL, ref string) (*url.URL, error) {
	if plainAbsolute(ref) || base != nil && plainRef(ref) && plainBase(base) {
		u, err := url.Parse(ref)
		if err == nil && base != nil {
			u = base.ResolveReference(u)
		}
		if err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Opaque == "" {
			u.Fragment, u.RawFragment = "", ""
			return u, nil
		}
	}
	return resolveWHATWG(base, ref)
}

// plainRef reports whether ref is a link in which net/url and the WHATWG
// standard cannot differ: only unreserved characters and the delimiters
// of a path and a query, no scheme but a lower-case http:// or https://
// one, and no host but a name of letters, digits, '-' and '.' whose last
// label begins and ends with a letter (no IPv4 address in any of its
// forms, no IPv6, no port).
func plainRef(ref string) bool {
	for i := 0; i < len(ref); i++ {
		c := ref[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~/?#&=+,;!$()*@", c) >= 0) {
			// Not ':' (a scheme, a port, or a path the standard may read
			// otherwise), nor '%': net/url resolves a reference by its
			// decoded path, and %2A would come back as *.
			return false
		}
	}
	// A network-path ("//host", "///x") is the standard's to read, and so
	// are empty segments ("/..//x": net/url drops one the standard keeps).
	return !strings.Contains(ref, "//")
}

// plainBase: net/url and the standard agree on base's directory. Not so
// when its last segment is a dot segment: the standard reads "/docs/.."
// as "/", whose directory is "/", where net/url keeps "/docs/". (A page's
// URL is canonical and has none; a caller's base may.)
func plainBase(base *url.URL) bool {
	p := base.EscapedPath()
	return !dotSegment(p[strings.LastIndexByte(p, '/')+1:])
}

// plainAbsolute is plainRef for an absolute http(s) URL: its scheme, then
// a plain host, then a plain rest.
func plainAbsolute(ref string) bool {
	rest, ok := strings.CutPrefix(ref, "http://")
	if !ok {
		if rest, ok = strings.CutPrefix(ref, "https://"); !ok {
			return false
		}
	}
	host, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" || !(last[0] >= 'a' && last[0] <= 'z') || !(last[len(last)-1] >= 'a' && last[len(last)-1] <= 'z') {
		return false // a last label that is no name of letters: empty, or one an IPv4 address may end in (digits, 0x…)
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return path == "" || plainRef(path)
}

// resolveWHATWG resolves ref by the standard's parser.
func resolveWHATWG(base *url.URL, ref string) (*url.URL, error) {
	var w *wurl.Url
	var err error
	if base != nil {
		w, err = whatwg.ParseRef(base.String(), ref)
	} else {
		w, err = whatwg.Parse(ref)
	}
	if err != nil {
		if u, perr := url.Parse(ref); base == nil && perr == nil && u.Scheme == "" {
			return nil, fmt.Errorf("%w: %q has no scheme (want http:// or https://)", ErrURL, clip(ref))
		}
		return nil, fmt.Errorf("%w: %q: %v", ErrURL, clip(ref), err)
	}
	if scheme := strings.TrimSuffix(w.Protocol(), ":"); scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("%w: %q", ErrScheme, clip(ref))
	}
	u, err := url.Parse(escapeStrayPercents(w.Href(true)))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrURL, clip(ref), unwrapURLError(err))
	}
	return u, nil
}
