package rendering_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/rendering"
	"github.com/redcrawl/crawler/internal/redistest"
)

// The shared subresource cache gives back what was put, body bytes as
// they were (newlines and zeros included), under its URL and kind only: a
// URL whose slot another took since is a miss, never the other's answer; a
// body past the limit is not kept; every slot expires; however many URLs
// are put, no more keys hold them than the kinds have slots; and pages'
// data, however much, never takes a shared script's place.
func TestTheSubresourceCacheIsSharedAndBounded(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f := struct{ Render rendering.Shared }{rendering.Shared{Set: keyspace.Set{Name: "sub", C: s.Client, Keys: []keyspace.Keys{keyspace.KeysFor("sub")}, Now: time.Now}}}
		body := []byte("line\n\x00binary\r\nend")
		if ok, err := f.Render.PutSub(ctx, "http://a/app.js", rendering.SubAsset, rendering.Sub{Status: 200, ContentType: "text/javascript", Body: body}); err != nil || !ok {
			t.Fatalf("put: %v %v", ok, err)
		}
		got, ok, err := f.Render.GetSub(ctx, "http://a/app.js", rendering.SubAsset)
		if err != nil || !ok || got.Status != 200 || got.ContentType != "text/javascript" || !bytes.Equal(got.Body, body) {
			t.Fatalf("get: %+v %v %v", got, ok, err)
		}
		if _, ok, _ := f.Render.GetSub(ctx, "http://a/other.js", rendering.SubAsset); ok {
			t.Fatal("a URL never put was a hit")
		}
		if _, ok, _ := f.Render.GetSub(ctx, "http://a/app.js", rendering.SubData); ok {
			t.Fatal("an asset was a hit as a page's data")
		}
		if ok, _ := f.Render.PutSub(ctx, "http://a/big.js", rendering.SubAsset, rendering.Sub{Status: 200, Body: make([]byte, rendering.SubMaxBody+1)}); ok {
			t.Fatal("a body past the limit was kept")
		}
		// Pages' data many times the slots: the script stays.
		for i := range 8 * rendering.SubDataSlots {
			u := fmt.Sprintf("http://a/api?page=%d", i)
			if _, err := f.Render.PutSub(ctx, u, rendering.SubData, rendering.Sub{Status: 200, Body: []byte(u)}); err != nil {
				t.Fatal(err)
			}
		}
		if got, ok, err := f.Render.GetSub(ctx, "http://a/app.js", rendering.SubAsset); err != nil || !ok || !bytes.Equal(got.Body, body) {
			t.Fatalf("after %d pages' data, the script: %+v %v %v; want it still there", 8*rendering.SubDataSlots, got, ok, err)
		}
		// Fill every slot many times over: each URL reads back as itself or
		// as a miss, the keys stay within the slots, each with its expiry.
		n := 4 * rendering.SubAssetSlots
		for i := range n {
			u := fmt.Sprintf("http://a/%d.css", i)
			if _, err := f.Render.PutSub(ctx, u, rendering.SubAsset, rendering.Sub{Status: 200, Body: []byte(u)}); err != nil {
				t.Fatal(err)
			}
		}
		hits := 0
		for i := range n {
			u := fmt.Sprintf("http://a/%d.css", i)
			got, ok, err := f.Render.GetSub(ctx, u, rendering.SubAsset)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				hits++
				if string(got.Body) != u {
					t.Fatalf("%s read back %q", u, got.Body)
				}
			}
		}
		keys := s.Client.Keys(ctx, keyspace.KeysFor("sub").Subs+"*").Val()
		if slots := rendering.SubAssetSlots + rendering.SubDataSlots; len(keys) == 0 || len(keys) > slots || hits > rendering.SubAssetSlots || hits == 0 {
			t.Fatalf("%d keys, %d hits of %d URLs; want some keys and at most %d, at most %d hits, and some", len(keys), hits, n, slots, rendering.SubAssetSlots)
		}
		for _, k := range keys {
			if ttl := s.Client.PTTL(ctx, k).Val(); ttl <= 0 || ttl > rendering.SubKeep+time.Second {
				t.Fatalf("%s expires in %v; want within %v", k, ttl, rendering.SubKeep)
			}
		}
	})
}
