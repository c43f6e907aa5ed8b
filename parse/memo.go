package parse

import (
	"net/url"
	"strings"
	"sync"
)

// A Memo remembers the canonical form of the links a crawl met, so that a
// link met again is not resolved and canonicalized again. A site's pages
// repeat their links (navigation, footers, the table of contents of a
// manual on each of its pages), and canonicalization was a third of a
// worker's CPU (bench/README.md).
//
// What a link resolves to depends on its page only through the page's
// directory: "../x.html" means the same on every page of /docs/a/. So an
// entry is keyed by the directory of the base URL and the link as
// written, and one entry serves every page of that directory. A link
// that keeps the base's last segment or query ("", "?q", "#f") is keyed
// by the whole base; an absolute http(s) URL by nothing else.
//
// A Memo is safe for concurrent use and bounded: it holds at most twice
// its size of entries, dropping the older half when the newer fills.
type Memo struct {
	mu       sync.Mutex
	cur, old map[memoKey]memoEntry
	size     int
}

type memoKey struct {
	dir, ref string
	keep     bool // tracking parameters kept
}

type memoEntry struct {
	canon string
	err   error // why the link is no usable URL
}

// MemoSize is a worker's memo: 2 x 16 384 links, a few MB.
const MemoSize = 1 << 14

// NewMemo is a Memo of size entries (and as many older ones).
func NewMemo(size int) *Memo {
	if size < 1 {
		size = 1
	}
	return &Memo{cur: make(map[memoKey]memoEntry), size: size}
}

func (m *Memo) get(k memoKey) (memoEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.cur[k]
	if !ok {
		if e, ok = m.old[k]; ok {
			m.putLocked(k, e)
		}
	}
	return e, ok
}

func (m *Memo) put(k memoKey, e memoEntry) {
	m.mu.Lock()
	m.putLocked(k, e)
	m.mu.Unlock()
}

func (m *Memo) putLocked(k memoKey, e memoEntry) {
	if len(m.cur) >= m.size {
		m.old, m.cur = m.cur, make(map[memoKey]memoEntry, m.size)
	}
	m.cur[k] = e
}

// Len is how many links the memo holds.
func (m *Memo) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cur) + len(m.old)
}

// baseKeys are a base URL's two keys: its directory, and itself.
type baseKeys struct {
	dir, whole string
}

func keysOf(base *url.URL) baseKeys {
	b := *base
	b.Fragment, b.RawFragment = "", ""
	whole := b.String()
	b.RawQuery, b.ForceQuery = "", false
	p := b.EscapedPath()
	b.Path, b.RawPath = "", ""
	slash := strings.LastIndexByte(p, '/')
	dir := b.String() + p[:slash+1]
	switch {
	case !strings.HasPrefix(p, "/"):
		dir = b.String() + "/" // no path: a link's is under the root
	case dotSegment(p[slash+1:]):
		// "/docs/..": the base's own last segment moves its directory.
		dir = whole
	}
	return baseKeys{dir: dir, whole: whole}
}

// dotSegment: s is "." or "..", as the standard reads them (%2e is a dot).
func dotSegment(s string) bool {
	s = strings.ReplaceAll(strings.ToLower(s), "%2e", ".")
	return s == "." || s == ".."
}

// key is the memo's key of ref (cleaned as canonicalize cleans it) met on
// a page whose base has keys ks.
func (ks baseKeys) key(ref string, keep bool) memoKey {
	// "http:?q" is "?q" on an http page (the standard reads a special
	// scheme's URL without "//" as relative to a base of that scheme).
	rest := ref
	if i := strings.IndexByte(ref, ':'); i == 4 && strings.EqualFold(ref[:i], "http") || i == 5 && strings.EqualFold(ref[:i], "https") {
		rest = ref[i+1:]
	}
	switch {
	case rest == "" || rest[0] == '?' || rest[0] == '#':
		return memoKey{ks.whole, ref, keep}
	case strings.HasPrefix(ref, "http://") || strings.HasPrefix(ref, "https://"):
		return memoKey{"", ref, keep}
	}
	return memoKey{ks.dir, ref, keep}
}

// canonical is CanonicalizeKeeping(base, ref, keep).String(), through the
// memo m (nil: none).
func (m *Memo) canonical(base *url.URL, ks *baseKeys, ref string, keep bool) (string, error) {
	if m == nil {
		u, err := CanonicalizeKeeping(base, ref, keep)
		if err != nil {
			return "", err
		}
		return u.String(), nil
	}
	if ks.dir == "" {
		*ks = keysOf(base)
	}
	// A link's fragment is dropped: "x.html#a" and "x.html#b" are one
	// entry ("#" kept: "#a" alone is the page itself, "" no link).
	ref = cleanRef(ref)
	if i := strings.IndexByte(ref, '#'); i >= 0 {
		ref = ref[:i+1]
	}
	k := ks.key(ref, keep)
	if e, ok := m.get(k); ok {
		return e.canon, e.err
	}
	var e memoEntry
	u, err := CanonicalizeKeeping(base, ref, keep)
	if err != nil {
		e.err = err
	} else {
		e.canon = u.String()
	}
	m.put(k, e)
	return e.canon, e.err
}
