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
	"github.com/redis/go-redis/v9"
)

// A host's index finds a near copy of its page, not a page of another
// host, and not a page fetched again (it matches itself); a crawl that is
// gone (its config deleted: a reset) writes nothing. On miniredis,
// redis-server and a Redis Cluster of 3 masters (each shard's keys in a
// slot of their own).
func TestAHostsIndexFindsItsPagesNearCopies(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) { hostsIndex(t, s.Client) })
	if !testing.Short() {
		t.Run("cluster", func(t *testing.T) { hostsIndex(t, redistest.RealCluster(t, 3).Client) })
	}
}

func hostsIndex(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	keys := []keyspace.Keys{keyspace.KeysForShard("nd", 0), keyspace.KeysForShard("nd", 1)}
	for _, k := range keys {
		c.HSet(ctx, k.Config, "scope", "host")
	}
	x := nearpages.Index{Set: keyspace.Set{Name: "nd", C: c, Keys: keys, Now: time.Now}}
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
		c.Del(ctx, k.Config)
	}
	if _, err := x.Check(ctx, "c.test", "http://c.test/1", sig(a)); !errors.Is(err, keyspace.ErrGone) {
		t.Errorf("a gone crawl's check: %v; want ErrGone", err)
	}
	for i := range keys {
		if n := c.Exists(ctx, keyspace.Tag("nd", i)+"near:c.test:pages").Val(); n != 0 {
			t.Errorf("a gone crawl's check wrote its host's index (shard %d)", i)
		}
	}
}
