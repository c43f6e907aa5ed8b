package nearpages_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/nearpages"
	"github.com/redcrawl/crawler/internal/dupset"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/neardup"
)

// A host's index finds a near copy of its page, not a page of another
// host, and not a page fetched again (it matches itself); a crawl that is
// gone (its config deleted: a reset) writes nothing.
func TestAHostsIndexFindsItsPagesNearCopies(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		keys := []keyspace.Keys{keyspace.KeysForShard("nd", 0), keyspace.KeysForShard("nd", 1)}
		for _, k := range keys {
			s.Client.HSet(ctx, k.Config, "scope", "host")
		}
		x := nearpages.Index{Set: keyspace.Set{Name: "nd", C: s.Client, Keys: keys, Now: time.Now}}
		site := dupset.NewSite(3)
		a := site.NewArticle(300)
		sig := func(a dupset.Article) neardup.Signature { return neardup.Sign(neardup.Words(site.Page(a))) }
		check := func(host, url string, a dupset.Article, want string) {
			t.Helper()
			if m, err := x.Check(ctx, host, url, sig(a)); err != nil || m.URL != want {
				t.Errorf("%s %s: %+v, %v; want %q", host, url, m, err, want)
			}
		}
		check("a.test", "http://a.test/1", a, "")
		check("b.test", "http://b.test/1", a, "") // another host's index
		check("a.test", "http://a.test/1", site.NearCopy(a, 2), "")
		check("a.test", "http://a.test/2", site.NearCopy(a, 2), "http://a.test/1")
		for _, k := range keys {
			s.Client.Del(ctx, k.Config)
		}
		before := s.Client.Keys(ctx, "*").Val()
		if _, err := x.Check(ctx, "c.test", "http://c.test/1", sig(a)); !errors.Is(err, keyspace.ErrGone) {
			t.Errorf("a gone crawl's check: %v; want ErrGone", err)
		}
		if after := s.Client.Keys(ctx, "*").Val(); len(after) != len(before) {
			t.Errorf("a gone crawl's check wrote keys: %v -> %v", before, after)
		}
	})
}
