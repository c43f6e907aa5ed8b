package payloads_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/payloads"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A crawl's digests are committed only once it is complete (its done
// flag set), as they are then; a later crawl's claims find an earlier
// crawl's committed payloads (the first crawl named that holds one), note
// them in its own index, and archive only the others; what the earlier
// crawl archived after its commit is not found, and its own payloads
// win over an earlier crawl's.
func TestACrawlsDigestsAreFoundOnlyOnceItCompletes(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		index := func(name string) payloads.Index {
			k := keyspace.KeysFor(name)
			s.Client.HSet(ctx, k.Config, "scope", "host")
			return payloads.Index{Set: keyspace.Set{Name: name, C: s.Client, Keys: []keyspace.Keys{k}, Now: time.Now}}
		}
		at := time.Unix(1796162337, 0)
		first, second, third := index("first"), index("second"), index("third")
		for _, d := range []string{"sha1:A", "sha1:B"} {
			if _, found, err := first.Claim(ctx, d, "http://one/"+d, at); err != nil || found {
				t.Fatalf("claim %s: %v %v", d, found, err)
			}
		}
		if _, err := first.Commit(ctx); !errors.Is(err, payloads.ErrNotComplete) {
			t.Fatalf("a running crawl's commit: %v; want ErrNotComplete", err)
		}
		if _, _, ok, _ := payloads.Committed(ctx, s.Client, "first"); ok {
			t.Fatal("a running crawl's digests are committed")
		}
		s.Client.Set(ctx, keyspace.KeysFor("first").DoneFlag, "1", 0)
		if n, err := first.Commit(ctx); err != nil || n != 2 {
			t.Fatalf("commit: %d, %v; want 2", n, err)
		}
		first.Claim(ctx, "sha1:C", "http://one/late", at) // after the commit: not found by later crawls
		third.Claim(ctx, "sha1:B", "http://three/b", at)  // a crawl not named
		s.Client.Set(ctx, keyspace.KeysFor("third").DoneFlag, "1", 0)
		third.Commit(ctx)
		second.Claim(ctx, "sha1:Z", "http://two/z", at.Add(time.Hour))
		claims := []payloads.Claim{{Digest: "sha1:A", URI: "http://two/a", Date: at.Add(time.Hour)},
			{Digest: "sha1:C", URI: "http://two/c", Date: at.Add(time.Hour)},
			{Digest: "sha1:Z", URI: "http://two/z2", Date: at.Add(time.Hour)},
			{Digest: "sha1:A", URI: "http://two/a2", Date: at.Add(time.Hour)}}
		got, found, err := second.ClaimAllFrom(ctx, []string{"nonesuch", "first"}, claims)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"http://one/sha1:A", "", "http://two/z", "http://one/sha1:A"}
		for i, w := range want {
			if found[i] != (w != "") || got[i].URI != w {
				t.Errorf("claim %d (%s): %+v, found %v; want %q", i, claims[i].Digest, got[i], found[i], w)
			}
		}
		if got[0].Date.Equal(at) != true {
			t.Errorf("the earlier crawl's date %v; want %v", got[0].Date, at)
		}
		if _, found, _ := second.Claim(ctx, "sha1:C", "http://two/c3", at.Add(2*time.Hour)); !found {
			t.Error("the second crawl's own archive of C is not in its index")
		}
	})
}
