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

// The digest index: the first claim of a payload notes its response, later
// ones find it; a claim taken back by another response is left alone.
func TestTheDigestIndexNotesTheFirstResponseOfAPayload(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		// The crawl exists while its config does (admin.Seed writes it).
		s.Client.HSet(ctx, keyspace.KeysFor("t").Config, "scope", "host")
		ix := payloads.Index{Set: keyspace.Set{Name: "t", C: s.Client, Keys: []keyspace.Keys{keyspace.KeysFor("t")}, Now: time.Now}}
		at := time.Unix(1796162337, 123456789)
		if _, found, err := ix.Claim(ctx, "sha1:X", "http://a/", at); err != nil || found {
			t.Fatalf("first claim: found %v, %v", found, err)
		}
		got, found, err := ix.Claim(ctx, "sha1:X", "http://b/", at.Add(time.Second))
		if err != nil || !found || got.URI != "http://a/" || !got.Date.Equal(at) {
			t.Fatalf("second claim: %+v %v %v; want http://a/ at %v", got, found, err, at)
		}
		if err := ix.Unclaim(ctx, "sha1:X", "http://b/", at.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := ix.Claim(ctx, "sha1:X", "http://c/", at); !found {
			t.Fatal("another response's unclaim removed the entry")
		}
		if err := ix.Unclaim(ctx, "sha1:X", "http://a/", at); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := ix.Claim(ctx, "sha1:X", "http://c/", at); found {
			t.Fatal("the entry stayed after its own response took it back")
		}
	})
}

// A crawl that is gone (its config deleted: a reset) claims nothing: the
// index is not written into a crawl that no longer exists.
func TestAGoneCrawlClaimsNoDigest(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		ix := payloads.Index{Set: keyspace.Set{Name: "gone", C: s.Client, Keys: []keyspace.Keys{keyspace.KeysFor("gone")}, Now: time.Now}}
		if _, _, err := ix.Claim(ctx, "sha1:X", "http://a/", time.Now()); !errors.Is(err, keyspace.ErrGone) {
			t.Fatalf("a claim in a gone crawl: %v; want ErrGone", err)
		}
		if n := s.Client.Exists(ctx, keyspace.Tag("gone", 0)+"digests").Val(); n != 0 {
			t.Fatal("a gone crawl's claim wrote the index")
		}
	})
}
