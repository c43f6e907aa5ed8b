package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/registry"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A worker id is one live worker's: registering it again is refused until
// that registration lapses or is removed, and a gone crawl registers nobody.
func TestRegisterRefusesALiveID(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		// The crawl exists while its config does (admin.Seed writes it).
		s.Client.HSet(ctx, keyspace.KeysFor("t").Config, "scope", "host")
		lease := 200 * time.Millisecond
		clock := time.Now()
		advance := func(d time.Duration) { // miniredis's clock, or the real one's
			if s.Mini != nil {
				clock = clock.Add(d)
				s.Mini.SetTime(clock)
				return
			}
			time.Sleep(d)
		}
		advance(0)
		roll := registry.Roll{Set: keyspace.Set{Name: "t", C: s.Client, Keys: []keyspace.Keys{keyspace.KeysFor("t")}, Now: time.Now},
			Lease: func() time.Duration { return lease }}
		if _, err := roll.Register(ctx, "w1"); err != nil {
			t.Fatalf("first Register: %v", err)
		}
		left, err := roll.Register(ctx, "w1")
		if !errors.Is(err, registry.ErrIDInUse) || left <= 0 || left > lease {
			t.Fatalf("Register of a live id = %v, %v; want ErrIDInUse and 0 < wait <= %v", left, err, lease)
		}
		if _, err := roll.Register(ctx, "w2"); err != nil {
			t.Fatalf("Register of another id: %v", err)
		}
		if ws, _ := roll.Workers(ctx); strings.Join(ws, ",") != "w1,w2" {
			t.Fatalf("workers %v, want w1,w2 (the refused call wrote nothing)", ws)
		}
		advance(lease + 20*time.Millisecond)
		if _, err := roll.Register(ctx, "w1"); err != nil {
			t.Fatalf("Register after the old registration lapsed: %v", err)
		}
		if err := roll.Deregister(ctx, "w1"); err != nil {
			t.Fatal(err)
		}
		if _, err := roll.Register(ctx, "w1"); err != nil {
			t.Fatalf("Register after Deregister: %v", err)
		}
		s.Client.Del(ctx, keyspace.KeysFor("t").Config)
		if _, err := roll.Register(ctx, "w3"); !errors.Is(err, keyspace.ErrGone) {
			t.Fatalf("Register on a gone crawl: %v, want ErrGone", err)
		}
	})
}
