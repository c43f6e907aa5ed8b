package parse

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

var (
	// ErrScheme: not an http or https URL (mailto:, javascript:, ftp:, …).
	ErrScheme = errors.New("parse: not an http(s) URL")
	// ErrURL: the text is not a usable URL.
	ErrURL = errors.New("parse: malformed URL")
)

// MaxURLLength bounds a canonical URL; longer ones are refused (crawler
// traps and hostile pages produce them, and they bloat every record). A
// crawl's own limit (--max-url-length, 1024 by default) may be set up to it.
const MaxURLLength = 32 << 10

var hostProfile = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.BidiRule())

// Canonicalize resolves ref against base (nil for an absolute URL) as a
// browser does (the WHATWG URL standard: testdata/whatwg and
// whatwg_test.go, with the few deviations kept and why), and returns the
// URL in the one spelling the crawler stores and dedups: lower-case scheme
// and host, IDNA host in punycode, IPv4 in dotted decimal, no default
// port, no user info, dot segments resolved, fragment dropped,
// percent-encoding normalized (RFC 3986 §6.2.2: unreserved characters
// decoded, hex digits upper-cased, anything that must be escaped escaped),
// empty path "/", a space in the query '+' and empty query parameters
// dropped (as forms write queries), tracking parameters (utm_*, gclid,
// fbclid, ...) removed: they name the same page for every campaign. The
// query otherwise keeps its order.
func Canonicalize(base *url.URL, ref string) (*url.URL, error) {
	return CanonicalizeKeeping(base, ref, false)
}

// CanonicalizeKeeping is Canonicalize, keeping tracking parameters when
// keepTracking is set (a crawl's --keep-tracking-params).
func CanonicalizeKeeping(base *url.URL, ref string, keepTracking bool) (*url.URL, error) {
	return canonicalize(resolve, base, ref, keepTracking)
}

// canonicalize is CanonicalizeKeeping with the resolver given (tests hold
// resolve's fast path to the standard's).
func canonicalize(resolve func(*url.URL, string) (*url.URL, error), base *url.URL, ref string, keepTracking bool) (*url.URL, error) {
	ref = cleanRef(ref)
	if ref == "" {
		return nil, fmt.Errorf("%w: empty", ErrURL)
	}
	u, err := resolve(base, ref)
	if err != nil {
		return nil, err
	}
	if u.Opaque != "" {
		return nil, fmt.Errorf("%w: %q has no host", ErrURL, clip(ref))
	}
	host, err := canonicalHost(u.Hostname())
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrURL, clip(ref), err)
	}
	port := u.Port()
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w: %q: bad port %q", ErrURL, clip(ref), clip(port))
		}
	}
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	out := &url.URL{Scheme: u.Scheme, Host: host}
	p := removeDotSegments(normalizeEscapes(u.EscapedPath(), pathKeep))
	if p == "" {
		p = "/"
	}
	if err := setPath(out, p); err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrURL, clip(ref), err)
	}
	if u.RawQuery != "" {
		out.RawQuery = formQuery(normalizeEscapes(u.RawQuery, queryKeep))
		if !keepTracking {
			out.RawQuery = stripTracking(out.RawQuery)
		}
	}
	if len(out.String()) > MaxURLLength {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrURL, MaxURLLength)
	}
	return out, nil
}

// cleanRef is ref as the standard reads it: C0 controls and spaces around
// a URL are dropped, and tabs and newlines inside it (a NUL inside is
// escaped later, %00).
func cleanRef(ref string) string {
	ref = strings.TrimFunc(ref, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(ref, "\r\n\t") {
		ref = strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' || r == '\t' {
				return -1
			}
			return r
		}, ref)
	}
	return ref
}

// CanonicalString is Canonicalize for an absolute URL, as a string.
func CanonicalString(raw string) (string, error) {
	u, err := Canonicalize(nil, raw)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

func canonicalHost(h string) (string, error) {
	if h == "" {
		return "", errors.New("no host")
	}
	if couldBeIP(h) {
		if ip := net.ParseIP(h); ip != nil {
			return ip.String(), nil
		}
	}
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	a, err := hostProfile.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("bad host %q: %v", clip(h), err)
	}
	if a == "" || len(a) > 253 || strings.HasPrefix(a, ".") || strings.HasSuffix(a, ".") || strings.Contains(a, "..") {
		return "", fmt.Errorf("bad host %q", clip(h))
	}
	return a, nil
}

// couldBeIP: h has only the characters of an IP address (a name with any
// other letter is not one, and need not be parsed as one, which costs an
// error value for every link of a page).
func couldBeIP(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' || c == '.' || c == ':' || c == '%') {
			return false
		}
	}
	return true
}

func setPath(u *url.URL, escaped string) error {
	p, err := url.PathUnescape(escaped)
	if err != nil {
		return err
	}
	u.Path = p
	u.RawPath = escaped
	if u.EscapedPath() != escaped { // RawPath was not a valid encoding of Path
		return fmt.Errorf("cannot keep path %q", clip(escaped))
	}
	return nil
}

// removeDotSegments is RFC 3986 §5.2.4.
func removeDotSegments(p string) string {
	// A dot segment starts the path or follows a '/': most paths (page.html
	// has a dot, no dot segment) need no work, and get none.
	if !strings.Contains(p, "/.") && !strings.HasPrefix(p, ".") {
		return p
	}
	var out []string
	segs := strings.Split(p, "/")
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	r := strings.Join(out, "/")
	if strings.HasPrefix(p, "/") && !strings.HasPrefix(r, "/") {
		r = "/" + r
	}
	return r
}

const hexUpper = "0123456789ABCDEF"

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

// Characters that may stand unescaped in a path or a query (besides the
// unreserved ones): sub-delims, ':', '@', '/', and '?' in a query.
const pathKeep = "!$&'()*+,;=:@/"
const queryKeep = "!$&'()*+,;=:@/?"

// normalizeEscapes decodes escaped unreserved characters, upper-cases the
// hex of the escapes that stay, and escapes bytes that may not stand bare.
// A '%' not followed by two hex digits is escaped as %25.
func normalizeEscapes(s, keep string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(hexUpper[v>>4])
				b.WriteByte(hexUpper[v&15])
			}
			i += 2
		case isUnreserved(c) || (c != '%' && strings.IndexByte(keep, c) >= 0):
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexUpper[c>>4])
			b.WriteByte(hexUpper[c&15])
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// escapeStrayPercents turns a '%' that starts no escape into %25, as
// browsers read it ("100%" is a literal percent, not a broken URL).
func escapeStrayPercents(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && !(i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2])) {
			b.WriteString("%25")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// formQuery spells a query as forms do, for the two ways of writing one
// query that every server reads alike: a space is '+' (%20 is too), and
// empty parameters ("?&a=1&&b=2&") are no parameters.
func formQuery(q string) string {
	q = strings.ReplaceAll(q, "%20", "+")
	if !strings.Contains(q, "&&") && !strings.HasPrefix(q, "&") && !strings.HasSuffix(q, "&") {
		return q
	}
	parts := strings.Split(q, "&")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "&")
}

// trackingParams name the same page once per campaign, click or visitor.
var trackingParams = map[string]bool{"gclid": true, "fbclid": true, "msclkid": true, "dclid": true, "yclid": true,
	"gbraid": true, "wbraid": true, "mc_cid": true, "mc_eid": true, "_ga": true, "_gl": true, "igshid": true}

// stripTracking removes tracking parameters from a query, keeping the
// order of the others.
func stripTracking(query string) string {
	if !strings.Contains(query, "utm_") && !strings.ContainsAny(query, "gfmdy_i") {
		return query
	}
	kept := make([]string, 0, strings.Count(query, "&")+1)
	for _, p := range strings.Split(query, "&") {
		name, _, _ := strings.Cut(p, "=")
		if lower := strings.ToLower(name); strings.HasPrefix(lower, "utm_") || trackingParams[lower] {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, "&")
}
