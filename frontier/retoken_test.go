package frontier_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A URL that missed its token's window asks its host again: its token
// goes back while it is the host's last, and the host gives it one now if
// a pop would. With a burst of 2 and an hour an interval, a pop takes both
// of a's tokens; the first URL's is not the host's last (the second's came
// after it), so it gets none; the second's is, so it gets its own again;
// and that leaves the host as spent as before: no third URL now.
func TestALateURLGetsATokenOnlyWhereAPopWould(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 1.0/3600, 2, 0
		e.enqueue(t, hostURLs("a", 3))
		x := popN(t, e.f, 3)
		if len(x.Popped) != 2 {
			t.Fatalf("popped %d; want a's two tokens' URLs", len(x.Popped))
		}
		first, last := x.Popped[0], x.Popped[1]
		if ok, err := e.f.Retoken(ctx, first); err != nil || ok {
			t.Fatalf("Retoken(first) = %v, %v; want false: a later token of a was taken after its own", ok, err)
		}
		ok, err := e.f.Retoken(ctx, last)
		if err != nil || !ok {
			t.Fatalf("Retoken(last) = %v, %v; want true: its token was a's last", ok, err)
		}
		if last.Deadline.Sub(last.NotBefore) < 30*time.Minute {
			t.Errorf("its new window is %v .. %v; want one open half an interval or more", last.NotBefore, last.Deadline)
		}
		if got := popN(t, e.f, 1).Popped; len(got) != 0 {
			t.Errorf("a third URL of a popped after the retoken; want none: the host's tokens are spent as before")
		}
		if ok, err := e.f.Retoken(ctx, last); err != nil || !ok {
			t.Errorf("Retoken(last) again = %v, %v; want true: its new token is a's last, and goes back for the same one", ok, err)
		}
	})
}

// A paused host has no token for a late URL, and a lease that ended has no
// token to ask for.
func TestALateURLOfAPausedHostOrALostLeaseGetsNoToken(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 1.0/3600, 1, 0
		e.enqueue(t, append(hostURLs("a", 1), hostURLs("b", 1)...))
		x := popN(t, e.f, 2)
		if len(x.Popped) != 2 {
			t.Fatalf("popped %d; want a's and b's URLs", len(x.Popped))
		}
		a, b := x.Popped[0], x.Popped[1]
		if a.Host != "a" {
			a, b = b, a
		}
		if _, err := e.f.PauseHost(ctx, "a", time.Hour, "a test"); err != nil {
			t.Fatal(err)
		}
		if ok, err := e.f.Retoken(ctx, a); err != nil || ok {
			t.Errorf("Retoken of a paused host's URL = %v, %v; want false", ok, err)
		}
		finish(t, e.f, b, frontier.Outcome{Stat: "ok", Fetched: true})
		if ok, err := e.f.Retoken(ctx, b); !errors.Is(err, frontier.ErrLeaseLost) {
			t.Errorf("Retoken of an ended lease = %v, %v; want ErrLeaseLost", ok, err)
		}
	})
}

// Without a limit there is no token to miss, and none to take: a late URL
// (its host's rate lifted since its pop) may go, with no window.
func TestALateURLOfAHostWithNoLimitMayGo(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.HostRate, e.f.HostBurst, e.f.PopAhead = 1.0/3600, 1, 0
		e.enqueue(t, hostURLs("a", 1))
		l := pop(t, e.f)
		e.f.HostRate = 0
		if ok, err := e.f.Retoken(context.Background(), l); err != nil || !ok || !l.Deadline.IsZero() {
			t.Errorf("Retoken = %v, %v, deadline %v; want true and no deadline", ok, err, l.Deadline)
		}
	})
}
