package frontier_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
)

// The shared subresource cache gives back what was put, body bytes as
// they were (newlines and zeros included), under its URL only: a URL
// whose slot another took since is a miss, never the other's answer; a
// body past the limit is not kept; every slot expires; and however many
// URLs are put, no more than SubSlots keys hold them.
func TestTheSubresourceCacheIsSharedAndBounded(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		f, _ := openLanes(t, s, frontier.Policy{})
		body := []byte("line\n\x00binary\r\nend")
		if ok, err := f.PutSub(ctx, "http://a/app.js", frontier.Sub{Status: 200, ContentType: "text/javascript", Body: body}); err != nil || !ok {
			t.Fatalf("put: %v %v", ok, err)
		}
		got, ok, err := f.GetSub(ctx, "http://a/app.js")
		if err != nil || !ok || got.Status != 200 || got.ContentType != "text/javascript" || !bytes.Equal(got.Body, body) {
			t.Fatalf("get: %+v %v %v", got, ok, err)
		}
		if _, ok, _ := f.GetSub(ctx, "http://a/other.js"); ok {
			t.Fatal("a URL never put was a hit")
		}
		if ok, _ := f.PutSub(ctx, "http://a/big.js", frontier.Sub{Status: 200, Body: make([]byte, frontier.SubMaxBody+1)}); ok {
			t.Fatal("a body past the limit was kept")
		}
		// Fill every slot many times over: each URL reads back as itself or
		// as a miss, the keys stay within the slots, each with its expiry.
		n := 4 * frontier.SubSlots
		for i := range n {
			u := fmt.Sprintf("http://a/%d.css", i)
			if _, err := f.PutSub(ctx, u, frontier.Sub{Status: 200, Body: []byte(u)}); err != nil {
				t.Fatal(err)
			}
		}
		hits := 0
		for i := range n {
			u := fmt.Sprintf("http://a/%d.css", i)
			got, ok, err := f.GetSub(ctx, u)
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
		keys := s.Client.Keys(ctx, frontier.KeysFor("ln").Subs+"*").Val()
		if len(keys) > frontier.SubSlots || hits > frontier.SubSlots || hits == 0 {
			t.Fatalf("%d keys, %d hits of %d URLs; want at most %d of each, and some hits", len(keys), hits, n, frontier.SubSlots)
		}
		for _, k := range keys {
			if ttl := s.Client.PTTL(ctx, k).Val(); ttl <= 0 || ttl > frontier.SubKeep+time.Second {
				t.Fatalf("%s expires in %v; want within %v", k, ttl, frontier.SubKeep)
			}
		}
	})
}
