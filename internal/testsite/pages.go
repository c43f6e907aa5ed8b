package testsite

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// The site's pages: what each links to, and what each link means.

func pageNumber(p string) (int, bool) {
	for _, prefix := range []string{"/p/", "/flaky/", "/private/"} {
		if strings.HasPrefix(p, prefix) && strings.HasSuffix(p, ".html") {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(p, prefix), ".html"))
			return n, err == nil && n >= 0
		}
	}
	return 0, false
}

// link is one link of a page: its href exactly as served, and the URL it
// means, written out by construction ("" for one that leaves the site or
// is no http URL). Truth follows the meanings and never canonicalizes an
// href itself: a canonicalization bug in the crawler then shows as URLs
// missed, instead of making truth and crawl agree.
type link struct{ href, means string }

// pageLinks returns the links of page p on host hi, and whether p is a
// page at all.
func (s *Site) pageLinks(hi int, p string) ([]link, bool) {
	P := s.cfg.Pages
	host := s.hosts[hi]
	at := func(path string) string { return "http://" + host + path }
	page := func(k int) string { return at(fmt.Sprintf("/p/%d.html", k)) }
	if p == "/" {
		return []link{{"/p/0.html", page(0)}, {"p/1.html", page(1)}, {"#top", at("/")},
			{"mailto:webmaster@example.invalid", ""}}, true
	}
	n, ok := pageNumber(p)
	if !ok || n >= P {
		return nil, false
	}
	if !strings.HasPrefix(p, "/p/") { // flaky and private pages are leaves
		return []link{{"/", at("/")}}, true
	}
	rng := rand.New(rand.NewPCG(uint64(hi), uint64(n)))
	links := []link{{"/", at("/")}, {"/p/0.html#nav", page(0)}} // navigation
	if n+1 < P {
		links = append(links, link{fmt.Sprintf("%d.html", n+1), page(n + 1)}) // relative chain: every page is reachable
	}
	for i := 0; i < 3; i++ { // one page, many spellings
		k := rng.IntN(P)
		switch rng.IntN(4) {
		case 0:
			links = append(links, link{fmt.Sprintf("/p/%d.html", k), page(k)})
		case 1:
			links = append(links, link{fmt.Sprintf("/p/%d.html#section-%d", k, i), page(k)})
		case 2:
			links = append(links, link{fmt.Sprintf("HTTP://%s/p/../p/%d.html", host, k), page(k)})
		case 3:
			links = append(links, link{fmt.Sprintf("./%d.html", k), page(k)})
		}
	}
	if n%10 == 4 && len(s.hosts) > 1 { // cross-host link
		other := (hi + 1 + rng.IntN(len(s.hosts)-1)) % len(s.hosts)
		k := rng.IntN(P)
		u := fmt.Sprintf("http://%s/p/%d.html", s.hosts[other], k)
		links = append(links, link{u, u})
	}
	if n%50 == 7 {
		links = append(links, link{fmt.Sprintf("/r/%d", (n*13+1)%P), at(fmt.Sprintf("/r/%d", (n*13+1)%P))})
	}
	if n%50 == 13 {
		links = append(links, link{fmt.Sprintf("/missing/%d.html", n), at(fmt.Sprintf("/missing/%d.html", n))})
	}
	if n%100 == 21 {
		links = append(links, link{fmt.Sprintf("/flaky/%d.html", n), at(fmt.Sprintf("/flaky/%d.html", n))})
	}
	if n%25 == 3 {
		links = append(links, link{fmt.Sprintf("/files/%d.pdf", n), at(fmt.Sprintf("/files/%d.pdf", n))})
	}
	if n%40 == 5 {
		links = append(links, link{"http://outside.invalid/not-in-scope", ""}, link{"mailto:someone@example.invalid", ""},
			link{"javascript:void(0)", ""})
	}
	if hi == 0 && n%20 == 2 {
		links = append(links, link{fmt.Sprintf("/private/%d.html", n), at(fmt.Sprintf("/private/%d.html", n))})
	}
	if n%60 == 11 { // the page's meta refresh (see the handler)
		links = append(links, link{"", page(s.refreshTarget(n))})
	}
	return links, true
}

// refreshTarget is where page n's meta refresh points (pages with n%60 == 11).
func (s *Site) refreshTarget(n int) int { return (n*7 + 3) % s.cfg.Pages }

// Truth is every in-scope HTML URL a correct crawl seeded with Roots must
// fetch (canonical form, sorted): what the pages link to, transitively,
// minus robots-disallowed, non-HTML, redirect and missing URLs.
func (s *Site) Truth() []string { truth, _ := s.walkAs(false); return truth }

// Fetchable is every URL a correct crawl seeded with Roots requests, once
// each (robots.txt aside; sorted): the truth, and the redirects, missing
// pages and files it links to. A page budget of len(Fetchable) is exactly
// enough for the whole site.
func (s *Site) Fetchable() []string { _, all := s.walkAs(false); return all }

// walkAs walks the site from its roots as a crawl does; plain, as one
// that does not render (scripted hosts' pages give no link).
func (s *Site) walkAs(plain bool) (truth, fetchable []string) {
	seen := map[string]bool{}
	var queue []string
	for _, r := range s.Roots() {
		seen[r] = true
		queue = append(queue, r)
	}
	add := func(u string) {
		if u != "" && !seen[u] {
			seen[u] = true
			queue = append(queue, u)
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		hi, p := s.hostOf(u)
		if hi < 0 {
			continue
		}
		if hi == 0 && strings.HasPrefix(p, "/private/") {
			continue
		}
		fetchable = append(fetchable, u)
		if strings.HasPrefix(p, "/r/") { // a redirect: its target counts, not itself
			if n, err := strconv.Atoi(strings.TrimPrefix(p, "/r/")); err == nil && n < s.cfg.Pages {
				add("http://" + s.hosts[hi] + fmt.Sprintf("/p/%d.html", n))
			}
			continue
		}
		links, ok := s.scriptedPageLinks(hi, p, plain)
		if !ok {
			continue // 404 or a file
		}
		truth = append(truth, u)
		for _, l := range links {
			add(l.means)
		}
	}
	sort.Strings(truth)
	sort.Strings(fetchable)
	return truth, fetchable
}

// hostOf splits a URL the site wrote into its host's index (-1 for none
// of the site's) and its path.
func (s *Site) hostOf(u string) (int, string) {
	rest, ok := strings.CutPrefix(u, "http://")
	if !ok {
		return -1, ""
	}
	for i, h := range s.hosts {
		if p, ok := strings.CutPrefix(rest, h); ok && strings.HasPrefix(p, "/") {
			return i, p
		}
	}
	return -1, ""
}
