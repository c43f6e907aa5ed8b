package crawl_test

import (
	"context"
	"errors"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"default", "q", "Q", "q2", "q-x", "q.x", "q_", "2026-11-30.docs", strings.Repeat("a", crawl.MaxNameLen)} {
		if err := crawl.CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v; want nil", ok, err)
		}
	}
	for _, bad := range []string{"", "q}:evil", "q:sub", "{q}", "a*", "a?", "a[b]", `a\b`, "a b", "-q", ".q", "é", "q\n",
		strings.Repeat("a", crawl.MaxNameLen+1)} {
		if err := crawl.CheckName(bad); !errors.Is(err, crawl.ErrName) {
			t.Errorf("CheckName(%q) = %v; want ErrName", bad, err)
		}
		if _, err := admin.Reset(context.Background(), nil, bad, false); !errors.Is(err, crawl.ErrName) {
			t.Errorf("Reset(%q) = %v; want ErrName before Redis is touched", bad, err)
		}
	}
}

// Reset of one crawl deletes all of its keys (the per-host ones and its
// shards' too) and none of another's, however alike the names.
func TestResetTouchesNoOtherCrawl(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		names := []string{"q", "Q", "q2", "q-x", "q.x", "q_", "qq", "x.q"}
		u, _ := url.Parse("http://site.example:8080/")
		for _, n := range names {
			set := settings.Default()
			set.Shards = 3
			if _, err := admin.Seed(ctx, s.Client, n, set, []*url.URL{u}); err != nil {
				t.Fatal(err)
			}
			// The per-host keys a worker writes.
			fr := frontierOf(t, s.Client, n, 3)
			s.Client.Set(ctx, fr.RateKey("site.example:8080"), "1", 0)
			s.Client.HSet(ctx, fr.RobotsKey("http", "other.example"), "status", 404)
			s.Client.Set(ctx, fr.LeaderKey()+":epoch", "3", 0)
		}
		before := keysByCrawl(t, s, names)
		if len(before["q"]) < 8 {
			t.Fatalf("crawl q has only keys %v", before["q"])
		}
		rep, err := admin.Reset(ctx, s.Client, "q", false)
		if err != nil || rep.Deleted != len(before["q"]) {
			t.Fatalf("Reset(q) = %+v, %v; want the %d keys %v", rep, err, len(before["q"]), before["q"])
		}
		after := keysByCrawl(t, s, names)
		if len(after["q"]) != 0 {
			t.Errorf("keys of q left: %v", after["q"])
		}
		for _, other := range names[1:] {
			if strings.Join(after[other], " ") != strings.Join(before[other], " ") {
				t.Errorf("reset of q changed crawl %s: %v -> %v", other, before[other], after[other])
			}
		}
	})
}

// keysByCrawl sorts every key in the server by the crawl that owns it,
// judged by its exact prefix.
func keysByCrawl(t *testing.T, s *redistest.Server, names []string) map[string][]string {
	t.Helper()
	all, err := s.Client.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(all)
	out := map[string][]string{}
	for _, key := range all {
		owner := ""
		for _, n := range names {
			if strings.HasPrefix(key, "crawl:{"+n+"}:") || strings.HasPrefix(key, "crawl:{"+n+"/") {
				if owner != "" {
					t.Fatalf("key %s belongs to crawls %s and %s", key, owner, n)
				}
				owner = n
			}
		}
		if owner == "" {
			t.Fatalf("key %s belongs to no crawl", key)
		}
		out[owner] = append(out[owner], key)
	}
	return out
}
