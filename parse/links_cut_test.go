package parse

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// A page with more links than the cap keeps the first MaxLinks in order,
// says it was cut and by how many; at or under the cap, nothing is cut.
func TestLinksPastTheCapAreCounted(t *testing.T) {
	base, _ := url.Parse("http://a.example/")
	for _, c := range []struct{ links, max, kept, cut int }{
		{0, 10, 0, 0}, {10, 10, 10, 0}, {11, 10, 10, 1}, {3000, 1000, 1000, 2000}, {5, 1, 1, 4},
	} {
		var b strings.Builder
		for i := 0; i < c.links; i++ {
			fmt.Fprintf(&b, `<a href="/p/%d">x</a>`, i)
		}
		p, err := Extract(base, strings.NewReader(b.String()), Limits{MaxLinks: c.max})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Links) != c.kept || p.Cut != c.cut || p.Truncated != (c.cut > 0) {
			t.Errorf("%d links, cap %d: kept %d, cut %d, truncated %v; want %d, %d", c.links, c.max, len(p.Links), p.Cut, p.Truncated, c.kept, c.cut)
		}
		if c.kept > 0 && p.Links[c.kept-1] != fmt.Sprintf("http://a.example/p/%d", c.kept-1) {
			t.Errorf("%d links, cap %d: the last kept is %s; want the first ones in order", c.links, c.max, p.Links[c.kept-1])
		}
	}
}
