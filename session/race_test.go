package session

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/internal/membersite"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
)

// A worker that read the session, then lost the race for the lock to
// another that logged in and let go of it, takes the lock and finds the
// session renewed already: it does not log in a second time.
func TestAWorkerThatTakesTheLockAfterAnothersLoginDoesNotLogInAgain(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := membersite.New("alice", "pw", 10, 0)
		srv := httptest.NewServer(site)
		defer srv.Close()
		cfg := Config{URL: srv.URL + "/login", Form: "user=alice&password=pw", LoggedOut: `/login`}
		fc := fetch.DefaultConfig()
		fc.AllowPrivate = true
		k := Keys{Session: "crawl:{r}:session", Lock: "crawl:{r}:session:lock"}
		ctx := context.Background()
		a, err := New(ctx, s.Client, k, cfg, fetch.New(fc), nil, "a")
		if err != nil {
			t.Fatal(err)
		}
		b, err := New(ctx, s.Client, k, cfg, fetch.New(fc), nil, "b")
		if err != nil {
			t.Fatal(err)
		}
		a.beforeLock = func() {
			a.beforeLock = nil
			if _, err := b.Renew(ctx, 0); err != nil { // b logs in, and lets go of the lock
				t.Error(err)
			}
		}
		if _, err := a.Renew(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if site.Posts() != 1 || a.Gen() != 1 || b.Gen() != 1 {
			t.Errorf("%d logins, generations %d and %d; want one login, generation 1 for both", site.Posts(), a.Gen(), b.Gen())
		}
	})
}

// A lock holder paused past its lock's time, whose lock another took
// since, writes nothing: its epoch is fenced off.
func TestAStaleLockHoldersSessionIsFencedOff(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		k := Keys{Session: "crawl:{f}:session", Lock: "crawl:{f}:session:lock"}
		old, err := obtainForTest(ctx, s, k.Lock, "old")
		if err != nil {
			t.Fatal(err)
		}
		s.Client.Del(ctx, k.Lock) // its time is up
		cur, err := obtainForTest(ctx, s, k.Lock, "new")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := swap(ctx, s.Client, k.Session, epochKey(k.Lock), old, 0, 0, []Hop{{URL: "http://a/", SetCookies: []string{"sid=old"}}}, ""); err == nil {
			t.Fatal("the stale holder wrote the session")
		}
		gen, err := swap(ctx, s.Client, k.Session, epochKey(k.Lock), cur, 0, 0, []Hop{{URL: "http://a/", SetCookies: []string{"sid=new"}}}, "")
		if err != nil || gen != 1 {
			t.Fatalf("the current holder's write: generation %d, %v", gen, err)
		}
		snap, err := read(ctx, s.Client, k.Session)
		if err != nil || snap.Gen != 1 || len(snap.Hops) != 1 || snap.Hops[0].SetCookies[0] != "sid=new" {
			t.Errorf("the session %+v, %v; want the current holder's", snap, err)
		}
		// The same holder again, with the generation it saw now gone by:
		// nothing written.
		if gen, err := swap(ctx, s.Client, k.Session, epochKey(k.Lock), cur, 0, 0, nil, "late"); err != nil || gen != 1 {
			t.Errorf("a write after generation 0, at 1: generation %d, %v; want 1 and nothing written", gen, err)
		}
	})
}

// obtainForTest takes the login's lock as id, and returns its epoch.
func obtainForTest(ctx context.Context, s *redistest.Server, key, id string) (int64, error) {
	l, err := leader.Obtain(ctx, s.Client, key, id, LockTTL)
	if err != nil {
		return 0, err
	}
	return l.Epoch(), nil
}
