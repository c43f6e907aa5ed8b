package neardup_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redcrawl/crawler/internal/dupset"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/neardup"
)

// The index on the labelled set (internal/dupset: near copies with
// another date line, 2-4 words changed and another banner; different
// articles sharing a site's furniture), on a site whose furniture is in
// <header>, <nav> and <footer> (left out of a page's words) and on one
// whose furniture is in plain divs (its footer's words then in every
// page's): each pair's first page is indexed, and the second checked
// against it, at a threshold of 0.5. Precision at least 0.98 and recall
// at least 0.9, over 1,000 pairs of each on redis-server (200 on
// miniredis, whose Lua runs in Go: the script's semantics, not the
// measure).
func TestTheIndexFindsNearCopiesAndOnlyThem(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		n := 1000
		if s.Mini != nil {
			n = 200
		}
		ctx := context.Background()
		for _, divs := range []bool{false, true} {
			site := dupset.NewSite(3)
			site.Divs = divs
			tp, fp, fn := 0, 0, 0
			for i, p := range site.Pairs(n) {
				x := neardup.Index{C: s.Client, Prefix: fmt.Sprintf("nd{%v%d}:", divs, i), Max: 100, Threshold: 0.5}
				if m, err := x.Check(ctx, neardup.Sign(neardup.Words(p.A)), "a"); err != nil || m.URL != "" {
					t.Fatalf("the first page of an empty index: %+v, %v", m, err)
				}
				m, err := x.Check(ctx, neardup.Sign(neardup.Words(p.B)), "b")
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case m.URL == "a" && p.Near:
					tp++
				case m.URL == "a":
					fp++
				case p.Near:
					fn++
				}
			}
			precision, recall := float64(tp)/float64(max(tp+fp, 1)), float64(tp)/float64(tp+fn)
			t.Logf("furniture in divs %v, %d pairs: precision %.3f, recall %.3f (%d found, %d wrongly, %d missed)", divs, n, precision, recall, tp, fp, fn)
			if precision < 0.98 || recall < 0.9 {
				t.Errorf("furniture in divs %v: precision %.3f, recall %.3f; want at least 0.98 and 0.9", divs, precision, recall)
			}
		}
	})
}

// The index keeps at most Max pages: the oldest leaves with its bands,
// and is no longer found; the others still are.
func TestTheIndexKeepsItsMostPages(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		site := dupset.NewSite(5)
		x := neardup.Index{C: s.Client, Prefix: "nd{max}:", Max: 10, Threshold: 0.5}
		var arts []dupset.Article
		for i := range 25 {
			a := site.NewArticle(200)
			arts = append(arts, a)
			if m, err := x.Check(ctx, neardup.Sign(neardup.Words(site.Page(a))), fmt.Sprint(i)); err != nil || m.URL != "" {
				t.Fatalf("article %d: %+v, %v; want it indexed", i, m, err)
			}
		}
		if n := s.Client.HLen(ctx, "nd{max}:pages").Val(); n != 11 { // ten pages and the last id
			t.Errorf("%d fields in pages; want 10 pages and the last id", n)
		}
		if n := s.Client.HLen(ctx, "nd{max}:bands").Val(); n > 10*neardup.Bands {
			t.Errorf("%d band fields; at most %d", n, 10*neardup.Bands)
		}
		for i := len(arts) - 1; i >= 0; i-- { // the kept first: a copy not matched is indexed, and evicts one
			m, err := x.Check(ctx, neardup.Sign(neardup.Words(site.Page(site.NearCopy(arts[i], 2)))), "copy")
			if err != nil {
				t.Fatal(err)
			}
			if kept := i >= 15; kept != (m.URL == fmt.Sprint(i)) {
				t.Errorf("a copy of article %d (kept: %v) matched %q", i, kept, m.URL)
			}
		}
	})
}

// What a page costs Redis: 2,000 different pages in one host's index
// (real redis-server's MEMORY USAGE of its three keys), at most 1,500
// bytes a page; one script call a page, two hash reads in it.
func TestTheIndexsBytesAPage(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	site := dupset.NewSite(11)
	x := neardup.Index{C: s.Client, Prefix: "nd{bytes}:", Max: 10000, Threshold: 0.5}
	const pages = 2000
	for i := range pages {
		if _, err := x.Check(ctx, neardup.Sign(neardup.Words(site.Page(site.NewArticle(300)))), fmt.Sprintf("https://example.com/articles/%06d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	for _, k := range []string{"bands", "pages", "order"} {
		total += s.Client.MemoryUsage(ctx, "nd{bytes}:"+k, 0).Val()
	}
	t.Logf("%d bytes a page (%d pages, URLs of 33 bytes)", total/pages, pages)
	if total/pages > 1500 {
		t.Errorf("%d bytes a page; want at most 1,500", total/pages)
	}
}

// Indexes that share a counter (a crawl's shard's hosts) index no page
// past its cap, yet still find what they hold; a page evicted from one
// counts off, so the counter is always the pages they hold in all.
func TestIndexesSharingACapIndexNoPagePastIt(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		site := dupset.NewSite(13)
		index := func(host string) neardup.Index {
			return neardup.Index{C: s.Client, Prefix: "nd{cap}:" + host + ":", Max: 3, Threshold: 0.5, Shared: "nd{cap}:count", SharedCap: 5}
		}
		a, b := index("a"), index("b")
		sign := func(x dupset.Article) neardup.Signature { return neardup.Sign(neardup.Words(site.Page(x))) }
		var arts []dupset.Article
		for i := range 6 { // four in a (its oldest evicted: it keeps 3), two in b
			x, ix := site.NewArticle(200), a
			if i >= 4 {
				ix = b
			}
			arts = append(arts, x)
			if m, err := ix.Check(ctx, sign(x), fmt.Sprint(i)); err != nil || m.URL != "" {
				t.Fatalf("article %d: %+v, %v", i, m, err)
			}
		}
		held := func() int64 {
			return s.Client.HLen(ctx, "nd{cap}:a:pages").Val() - 1 + s.Client.HLen(ctx, "nd{cap}:b:pages").Val() - 1
		}
		if n, _ := s.Client.Get(ctx, "nd{cap}:count").Int64(); n != 5 || held() != 5 {
			t.Fatalf("the counter says %d, the indexes hold %d; want 5 and 5", n, held())
		}
		over := site.NewArticle(200)
		if m, err := b.Check(ctx, sign(over), "over"); err != nil || m.URL != "" {
			t.Fatalf("a page past the cap: %+v, %v", m, err)
		}
		if m, _ := b.Check(ctx, sign(site.NearCopy(over, 2)), "copy"); m.URL != "" {
			t.Errorf("a copy of a page past the cap found %q; it was not indexed", m.URL)
		}
		if m, _ := b.Check(ctx, sign(site.NearCopy(arts[5], 2)), "copy5"); m.URL != "5" {
			t.Errorf("a copy of a page held found %q; want 5", m.URL)
		}
		if n, _ := s.Client.Get(ctx, "nd{cap}:count").Int64(); n != 5 || held() != 5 {
			t.Errorf("after the cap: the counter says %d, the indexes hold %d; want 5 and 5", n, held())
		}
	})
}
