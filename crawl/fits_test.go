package crawl_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A seed whose Bloom filter would not fit in its Redis (allocated whole
// when the crawl is made) is refused with the size it would need, and
// creates nothing: 10^11 expected URLs on a machine's Redis, and 10^8
// under a maxmemory of 100 MB; 10^6 under it goes in.
func TestASeedWhoseFilterWouldNotFitIsRefused(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	seed, _ := url.Parse("http://a.example/")
	for _, c := range []struct {
		maxmemory string
		expected  int64
		fits      bool
	}{{"0", 100_000_000_000, false}, {"100mb", 100_000_000, false}, {"100mb", 1_000_000, true}} {
		s.Client.ConfigSet(ctx, "maxmemory", c.maxmemory)
		set := settings.Default()
		set.ExpectedURLs = c.expected
		_, err := admin.Seed(ctx, s.Client, "big", set, []*url.URL{seed})
		switch {
		case c.fits && err != nil:
			t.Errorf("%d expected URLs under maxmemory %s: %v", c.expected, c.maxmemory, err)
		case !c.fits && (!errors.Is(err, crawl.ErrSettings) || !strings.Contains(err.Error(), "needs a Bloom filter of")):
			t.Errorf("%d expected URLs under maxmemory %s: %v; want a refusal naming the size", c.expected, c.maxmemory, err)
		case !c.fits:
			if n := s.Client.DBSize(ctx).Val(); n != 0 {
				t.Errorf("a refused seed left %d keys", n)
			}
			t.Logf("refused: %v", err)
		}
	}
	s.Client.ConfigSet(ctx, "maxmemory", "0")
}
