// Package parse turns what a page says into what the crawler stores: URLs
// in one canonical spelling, the links of an HTML page, and whether a URL
// is in a crawl's scope. It knows nothing of Redis or the network.
//
// # Canonical URLs
//
// Deduplication is only as good as the spelling of URLs: "HTTP://Host:80/a/./b#x"
// and "http://host/a/b" are one page, and a crawler that stores both
// fetches it twice. Canonicalize first resolves a link as a browser does,
// by the WHATWG URL standard (github.com/nlnwa/whatwg-url: '\' is '/' in
// http(s) URLs, "///x" and "http:x" resolve against their base, ports lose
// leading zeros, IPv4 hosts in any numeric form become dotted decimal, a
// host that is none is refused), then applies RFC 3986's normalizations
// (§6.2.2 syntax: case, percent-encoding, dot segments; §6.2.3 scheme:
// default port, empty path) and the crawler's own choices: no fragment, no
// user info, a space in the query spelled '+' and empty parameters dropped
// (as forms write queries), a length limit. Otherwise the query is kept as
// it is, in its order: reordering parameters changes some sites' answers.
// The standard's own tests (testdata/whatwg) check it, deviations listed.
//
// # Links
//
// Extract returns a page's title and every link a browser would follow or
// a crawler should know of: a[href], area[href], frames and iframes,
// link[rel=canonical], and the target of a meta refresh (a page that
// redirects that way is not a dead end). Links resolve against <base
// href>; non-http(s) links (mailto:, javascript:) are dropped; Limits
// bound what one hostile page can cost.
//
// It reads the page with a scanner (scan.go) that goes from tag to tag as
// the HTML tokenizer would (comments, doctypes and the raw text of
// scripts, styles and titles stepped over by the tokenizer's own rules)
// and decodes only the attributes link extraction asks for; the
// tokenizer-based extraction it replaced is kept in the tests as its
// oracle. A Memo, which a worker's pages share, remembers the canonical
// form of each link by the directory it was met in: a site's pages repeat
// their links. Only --extract fields need a document tree (goquery).
//
// # Scope
//
// A Scope says which hosts a crawl may enter: the seeds' hosts, their
// registrable domains (public-suffix aware, so "example.co.uk" is not one
// domain with every other ".co.uk"), or any.
package parse
