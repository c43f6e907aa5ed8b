package neardup_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/redcrawl/crawler/internal/dupset"
	"github.com/redcrawl/crawler/neardup"
)

// A page's words are its own text: not its navigation, header, footer,
// scripts, styles or forms, and not the text of its links; lower case,
// split at what is not a letter or a digit (accented letters kept).
func TestWordsAreThePagesOwnText(t *testing.T) {
	page := `<html><head><title>T</title><style>p{}</style></head><body>
<header>Logo here</header><nav><a href="/">Home</a> menu</nav>
<div class="banner">Big SALE</div>
<article><p>Élan, vital: the café's 2nd <a href="/x">linked words</a>day.</p>
<script>var x = "hidden";</script><form><input> Search this</form></article>
<aside>related stuff</aside><footer>© 2026 Footer</footer></body></html>`
	got := neardup.Words([]byte(page))
	want := []string{"t", "big", "sale", "élan", "vital", "the", "café", "s", "2nd", "day"}
	if !slices.Equal(got, want) {
		t.Errorf("Words = %q; want %q", got, want)
	}
}

// The same words give the same fingerprint; a word changed in a long
// text moves it a little; different texts differ in about half their bits.
func TestSimHashMovesWithTheText(t *testing.T) {
	s := dupset.NewSite(7)
	a := s.NewArticle(400)
	words := func(x dupset.Article) []string { return neardup.Words(s.Page(x)) }
	wa := words(a)
	if d := neardup.Distance(neardup.SimHash(wa, 2), neardup.SimHash(slices.Clone(wa), 2)); d != 0 {
		t.Errorf("the same words %d bits apart", d)
	}
	one := slices.Clone(wa)
	one[len(one)/2] = "changed"
	if d := neardup.Distance(neardup.SimHash(wa, 2), neardup.SimHash(one, 2)); d > 8 {
		t.Errorf("a word changed of %d: %d bits apart", len(wa), d)
	}
	far := 0
	for range 20 {
		far += neardup.Distance(neardup.SimHash(wa, 2), neardup.SimHash(words(s.NewArticle(400)), 2))
	}
	if far/20 < 24 || far/20 > 40 {
		t.Errorf("different articles %d bits apart on average; want about 32", far/20)
	}
	if fp := neardup.SimHash(nil, 2); fp != neardup.SimHash(nil, 2) {
		t.Error("an empty page's fingerprint is not stable")
	}
}

// BenchmarkLabelledSet measures SimHash on the labelled set (2,000 pairs,
// half near copies: internal/dupset) for shingles of 1 to 3 words: the
// precision and recall at each one's distance that keeps precision at 1,
// and the Jaccard similarity of the pairs' shingle sets (what MinHash
// estimates): the least of the near copies', the most of the others'.
func BenchmarkLabelledSet(b *testing.B) {
	pairs := dupset.Pairs(1, 2000)
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("shingle=%d", n), func(b *testing.B) {
			var near, far []int
			minNear, maxFar := 1.0, 0.0
			for range b.N {
				near, far = near[:0], far[:0]
				for _, p := range pairs {
					wa, wb := neardup.Words(p.A), neardup.Words(p.B)
					d := neardup.Distance(neardup.SimHash(wa, n), neardup.SimHash(wb, n))
					j := jaccard(wa, wb, n)
					if p.Near {
						near, minNear = append(near, d), min(minNear, j)
					} else {
						far, maxFar = append(far, d), max(maxFar, j)
					}
				}
			}
			k := slices.Min(far) - 1 // the widest distance no different pair is within
			caught := 0
			for _, d := range near {
				if d <= k {
					caught++
				}
			}
			b.ReportMetric(float64(k), "distance")
			b.ReportMetric(float64(caught)/float64(len(near)), "recall@precision1")
			b.ReportMetric(minNear, "least-near-jaccard")
			b.ReportMetric(maxFar, "most-different-jaccard")
		})
	}
}

// jaccard is the Jaccard similarity of a's and b's sets of n-word shingles.
func jaccard(a, b []string, n int) float64 {
	set := func(w []string) map[string]bool {
		m := map[string]bool{}
		for i := 0; i+n <= len(w); i++ {
			m[fmt.Sprint(w[i:i+n])] = true
		}
		return m
	}
	sa, sb := set(a), set(b)
	inter := 0
	for k := range sa {
		if sb[k] {
			inter++
		}
	}
	return float64(inter) / float64(len(sa)+len(sb)-inter)
}

// BenchmarkSignAPage is what a page costs its worker: the main text of a
// page of 1,000 words read (Words) and its MinHash signature made (Sign).
func BenchmarkSignAPage(b *testing.B) {
	s := dupset.NewSite(2)
	page := s.Page(s.NewArticle(1000))
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		neardup.Sign(neardup.Words(page))
	}
}
