package politeness

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// What a crawl keeps of a robots.txt (For, and its compact text in Redis)
// answers every path and the Crawl-delay as the whole file does, for the
// agent it was kept for, whatever the file: groups for several agents,
// '*', repeats, wildcards, '$', delays.
func TestTheRulesKeptAnswerAsTheWholeFile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		agents := []string{"redcrawl", "googlebot", "*", "other-bot"}
		segs := []string{"/", "/a", "/a/b", "/b", "/*.pdf", "/a*", "/p?q=1", "/x$", "/%41", "/é"}
		var b strings.Builder
		for g := rapid.IntRange(0, 5).Draw(t, "groups"); g > 0; g-- {
			for n := rapid.IntRange(1, 2).Draw(t, "agents"); n > 0; n-- {
				fmt.Fprintf(&b, "User-agent: %s\n", rapid.SampledFrom(agents).Draw(t, "agent"))
			}
			for n := rapid.IntRange(0, 6).Draw(t, "rules"); n > 0; n-- {
				kind := rapid.SampledFrom([]string{"Allow", "Disallow", "Crawl-delay"}).Draw(t, "kind")
				if kind == "Crawl-delay" {
					fmt.Fprintf(&b, "Crawl-delay: %d\n", rapid.IntRange(0, 100).Draw(t, "delay"))
					continue
				}
				fmt.Fprintf(&b, "%s: %s\n", kind, rapid.SampledFrom(segs).Draw(t, "pattern"))
			}
		}
		full := ParseRobotsTxt([]byte(b.String()))
		me := rapid.SampledFrom([]string{"RedCrawl", "googlebot", "nobody"}).Draw(t, "me")
		kept := full.For(me)
		back := fromCompact(me, kept.compact())
		for _, p := range []string{"/", "/a", "/a/b/c", "/b", "/doc.pdf", "/p?q=1", "/x", "/xy", "/A", "/%C3%A9", "/robots.txt"} {
			want := full.Allowed(me, p)
			if kept.Allowed(me, p) != want || back.Allowed(me, p) != want {
				t.Fatalf("%q for %s: whole %v, kept %v, from Redis %v\n%s", p, me, want, kept.Allowed(me, p), back.Allowed(me, p), b.String())
			}
		}
		d, c := full.CrawlDelay(me)
		if d2, c2 := kept.CrawlDelay(me); d2 != d || c2 != c {
			t.Fatalf("Crawl-delay kept %v %v; whole %v %v", d2, c2, d, c)
		}
		if d2, c2 := back.CrawlDelay(me); d2 != d || c2 != c {
			t.Fatalf("Crawl-delay from Redis %v %v; whole %v %v", d2, c2, d, c)
		}
	})
	for _, status := range []int{404, 301} { // allow all, disallow all
		full := RobotsFromStatus(status, nil)
		back := fromCompact("redcrawl", full.For("redcrawl").compact())
		if back.Allowed("redcrawl", "/x") != full.Allowed("redcrawl", "/x") {
			t.Errorf("status %d: the verdict was not kept", status)
		}
	}
}

// A 500 KiB robots.txt written mostly for other crawlers keeps a few
// bytes: what Redis and the local cache hold is the agent's rules.
func TestALargeRobotsTxtKeepsItsAgentsRules(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 500<<10; i++ {
		fmt.Fprintf(&b, "User-agent: bot%d\nDisallow: /private/%d/\nAllow: /public/%d/\n\n", i, i, i)
	}
	b.WriteString("User-agent: RedCrawl\nDisallow: /mine/\nCrawl-delay: 2\n")
	full := ParseRobotsTxt([]byte(b.String()))
	kept := full.For("RedCrawl")
	if n := len(kept.compact()); n > 64 {
		t.Fatalf("kept %d bytes of a %d-byte file: %q", n, b.Len(), kept.compact())
	}
	if kept.Allowed("RedCrawl", "/mine/x") || !kept.Allowed("RedCrawl", "/private/1/") || kept.size() > 1024 {
		t.Fatalf("kept rules answer wrongly, or hold %d bytes", kept.size())
	}
	t.Logf("a %d-byte robots.txt: %d bytes parsed whole, %d kept", b.Len(), full.size(), kept.size())
}
