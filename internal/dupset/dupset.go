// Package dupset generates a labelled set of page pairs for measuring a
// near-duplicate detector (package neardup): pairs that are the same
// article (a near copy: another date line, a couple of words changed,
// another banner) and pairs that are different articles of the same site
// (the same navigation, header, footer and related links). Articles have
// a few hundred words from a vocabulary of a few thousand, drawn
// Zipf-like, as a language's are. Deterministic for a seed.
package dupset

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// A Pair is two pages, and whether they are the same article.
type Pair struct {
	A, B []byte
	Near bool
}

// Site makes a site's pages: its vocabulary and furniture.
type Site struct {
	r       *rand.Rand
	vocab   []string
	zipf    *rand.Zipf
	nav     string
	footer  string
	banners []string
	// Divs: the site's furniture (header, navigation, footer) is in
	// plain divs, not the elements HTML names it by, as many a site's is.
	Divs bool
}

// NewSite is a site for seed.
func NewSite(seed uint64) *Site {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	s := &Site{r: r}
	syll := []string{"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "gri", "sto", "fen", "dar", "mol", "ith", "un", "er", "al", "os"}
	seen := map[string]bool{}
	for len(s.vocab) < 4000 {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			s.vocab = append(s.vocab, w)
		}
	}
	s.zipf = rand.NewZipf(r, 1.1, 2, uint64(len(s.vocab)-1))
	var nav strings.Builder
	for i := range 12 {
		fmt.Fprintf(&nav, `<a href="/section/%d">%s %s</a> `, i, s.word(), s.word())
	}
	s.nav = nav.String()
	s.footer = s.sentence(25) + " " + s.sentence(15)
	for range 5 {
		s.banners = append(s.banners, s.sentence(10))
	}
	return s
}

func (s *Site) word() string { return s.vocab[s.zipf.Uint64()] }

func (s *Site) sentence(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = s.word()
	}
	return strings.Join(w, " ")
}

// An Article is a page's own text: its title, date line and paragraphs.
type Article struct {
	Title, Date string
	Paras       [][]string
}

// NewArticle is an article of about words words (a few hundred).
func (s *Site) NewArticle(words int) Article {
	a := Article{Title: s.sentence(6), Date: s.date()}
	for left := words; left > 0; {
		n := min(left, 40+s.r.IntN(60))
		a.Paras = append(a.Paras, strings.Fields(s.sentence(n)))
		left -= n
	}
	return a
}

func (s *Site) date() string {
	return fmt.Sprintf("Published %04d-%02d-%02d %02d:%02d by %s", 2020+s.r.IntN(7), 1+s.r.IntN(12), 1+s.r.IntN(28), s.r.IntN(24), s.r.IntN(60), s.word())
}

// NearCopy is a copy of a as a site serves it again: another date line
// and changed words changed (each replaced by another word).
func (s *Site) NearCopy(a Article, changed int) Article {
	c := Article{Title: a.Title, Date: s.date()}
	for _, p := range a.Paras {
		c.Paras = append(c.Paras, append([]string(nil), p...))
	}
	for range changed {
		p := c.Paras[s.r.IntN(len(c.Paras))]
		p[s.r.IntN(len(p))] = s.word()
	}
	return c
}

// Page is the HTML of article a on the site, with a banner of its
// rotating ones and related links.
func (s *Site) Page(a Article) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title></head><body>\n", a.Title)
	header, nav, footer := "header", "nav", "footer"
	if s.Divs {
		header, nav, footer = "div", "div", "div"
	}
	fmt.Fprintf(&b, "<%s><div class=\"logo\">The %s %s</div></%s>\n<%s>%s</%s>\n", header, s.vocab[1], s.vocab[2], header, nav, s.nav, nav)
	fmt.Fprintf(&b, "<div class=\"banner\">%s</div>\n", s.banners[s.r.IntN(len(s.banners))])
	fmt.Fprintf(&b, "<article><h1>%s</h1><p class=\"date\">%s</p>\n", a.Title, a.Date)
	for _, p := range a.Paras {
		fmt.Fprintf(&b, "<p>%s</p>\n", strings.Join(p, " "))
	}
	b.WriteString("</article>\n<div class=\"related\">")
	for range 5 {
		fmt.Fprintf(&b, `<a href="/a/%d">%s</a> `, s.r.IntN(1000), s.sentence(5))
	}
	fmt.Fprintf(&b, "</div>\n<%s>%s</%s></body></html>\n", footer, s.footer, footer)
	return []byte(b.String())
}

// Pairs is a labelled set of n pairs for seed, half near copies (2 to 4
// words changed, another date line, a banner drawn again) and half
// different articles of one site, articles of 150 to 600 words.
func Pairs(seed uint64, n int) []Pair { return NewSite(seed).Pairs(n) }

// Pairs is a labelled set of n pairs of the site's pages, as Pairs.
func (s *Site) Pairs(n int) []Pair {
	out := make([]Pair, 0, n)
	for i := range n {
		a := s.NewArticle(150 + s.r.IntN(451))
		if i%2 == 0 {
			out = append(out, Pair{A: s.Page(a), B: s.Page(s.NearCopy(a, 2+s.r.IntN(3))), Near: true})
		} else {
			out = append(out, Pair{A: s.Page(a), B: s.Page(s.NewArticle(150 + s.r.IntN(451)))})
		}
	}
	return out
}

// Triples is a site of n articles (/article/I), a near copy of each
// (/copy/I: another date line, 2 to 4 words changed, a banner drawn
// again) and n different articles (/other/I), all of 150 to 600 words
// and sharing the site's navigation, header and footer: path -> page.
func Triples(seed uint64, n int) map[string][]byte {
	s := NewSite(seed)
	pages := map[string][]byte{}
	for i := range n {
		a := s.NewArticle(150 + s.r.IntN(451))
		pages[fmt.Sprintf("/article/%d", i)] = s.Page(a)
		pages[fmt.Sprintf("/copy/%d", i)] = s.Page(s.NearCopy(a, 2+s.r.IntN(3)))
		pages[fmt.Sprintf("/other/%d", i)] = s.Page(s.NewArticle(150 + s.r.IntN(451)))
	}
	return pages
}
