package session_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/internal/membersite"
	"github.com/redcrawl/crawler/internal/rapidtest"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/session"
	"pgregory.net/rapid"
)

const secret = "pw-Zx81-never-shown"

func keysOf(name string) session.Keys {
	return session.Keys{Session: "crawl:{" + name + "}:session", Lock: "crawl:{" + name + "}:session:lock"}
}

// serve serves site on loopback until the test ends, and is the login
// of alice with the password secret at it.
func serve(t interface{ Cleanup(func()) }, site *membersite.Site) (*httptest.Server, session.Config) {
	srv := httptest.NewServer(site)
	t.Cleanup(srv.Close)
	return srv, session.Config{URL: srv.URL + "/login", Form: "user=alice&password=" + secret, LoggedOut: `/login`}
}

// worker is a crawl worker's share of a session test: its session and
// the fetcher whose requests go with it.
type worker struct {
	s *session.Shared
	f *fetch.Fetcher
}

func newWorker(t interface {
	Fatal(...any)
	Cleanup(func())
}, s *redistest.Server, name string, cfg session.Config, allowed session.Allowed, id string) worker {
	fc := fetch.DefaultConfig()
	fc.AllowPrivate = true
	poster := fetch.New(fc)
	sh, err := session.New(context.Background(), s.Client, keysOf(name), cfg, poster, allowed, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh.Close() })
	fc.Jar = sh
	return worker{s: sh, f: fetch.New(fc)}
}

// get fetches member page n as a crawl's fetch loop does: the session's
// generation read before the request, and a logged-out answer renewing
// it and trying again. It returns the page's body, or "" once the login
// failed.
func (w worker) get(ctx context.Context, base string, n int) (string, error) {
	for try := 0; try < 1000; try++ {
		if failed, _ := w.s.Failed(); failed {
			return "", nil
		}
		gen := w.s.Gen()
		r, err := w.f.Fetch(ctx, fmt.Sprintf("%s/members/%d", base, n))
		if err != nil {
			return "", err
		}
		if !w.s.LoggedOut(r.Status, r.Location) {
			return string(r.Body), w.s.Used(ctx, gen)
		}
		if _, err := w.s.Renew(ctx, gen); err != nil {
			return "", err
		}
	}
	return "", errors.New("logged out a thousand times")
}

// The session over its range: sessions that end after 1 to 1,000
// requests, 1 to 3 workers of 1 to 8 loops each, 1 to 150 member pages:
// every page is answered with its own content, and the site sees no
// more logins than the pages need, one a session's worth of requests:
// however many requests meet the same session's end, one worker logs
// in again, the others wait for it.
func TestASessionIsRenewedOnceForAllWhoseRequestsMeetItsEnd(t *testing.T) {
	rapidtest.FewerUnderRace(t, 25)
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		n := 0
		rapid.Check(t, func(rt *rapid.T) {
			n++
			expiry := int(math.Round(math.Pow(1000, rapid.Float64Range(0, 1).Draw(rt, "log1000 expiry"))))
			pages := rapid.IntRange(1, 150).Draw(rt, "pages")
			workers := rapid.IntRange(1, 3).Draw(rt, "workers")
			loops := rapid.IntRange(1, 8).Draw(rt, "loops")
			unauthorized := rapid.Bool().Draw(rt, "401")
			site := membersite.New("alice", secret, pages, expiry)
			site.Unauthorized = unauthorized
			srv, cfg := serve(rt, site)
			name := fmt.Sprintf("s%d", n)
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, workers*loops)
			for w := range workers {
				wk := newWorker(rt, s, name, cfg, nil, fmt.Sprintf("w%d", w))
				for range loops {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for p := int(next.Add(1) - 1); p < pages; p = int(next.Add(1) - 1) {
							body, err := wk.get(ctx, srv.URL, p)
							if err == nil && !strings.Contains(body, membersite.Content(p)) {
								err = fmt.Errorf("member page %d answered %q", p, body)
							}
							if err != nil {
								errs <- err
								return
							}
						}
					}()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				rt.Fatal(err)
			}
			if most := max(1, (pages+expiry-1)/expiry); site.Posts() > most {
				rt.Fatalf("%d logins for %d pages of sessions of %d requests; at most %d", site.Posts(), pages, expiry, most)
			}
		})
	})
}

// A wrong password: one login, the session failed with why (the site's
// logged-out page answered), every waiting worker told so; the password
// in no error.
func TestAWrongPasswordFailsTheSessionOnceForEveryWorker(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := membersite.New("alice", "right", 10, 0)
		_, cfg := serve(t, site)
		var wg sync.WaitGroup
		whys := make([]string, 6)
		for i := range whys {
			wk := newWorker(t, s, "wrong", cfg, nil, fmt.Sprintf("w%d", i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := wk.s.Renew(context.Background(), 0); err != nil {
					whys[i] = "error: " + err.Error()
					return
				}
				_, whys[i] = wk.s.Failed()
			}()
		}
		wg.Wait()
		for i, why := range whys {
			if !strings.Contains(why, "logged-out page") || strings.Contains(why, secret) {
				t.Errorf("worker %d: why %q; want the logged-out page named, and no password", i, why)
			}
		}
		if site.Posts() != 1 {
			t.Errorf("%d logins POSTed; want 1: a failed login is final", site.Posts())
		}
	})
}

// A site that takes the form but refuses every session it gives: the
// login fails after Strikes + 1 logins, not one a request for ever.
func TestASiteThatRefusesItsOwnSessionsFailsTheLogin(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := membersite.New("alice", secret, 10, 0)
		site.Refusing = true
		srv, cfg := serve(t, site)
		wk := newWorker(t, s, "refusing", cfg, nil, "w")
		body, err := wk.get(context.Background(), srv.URL, 3)
		if err != nil || body != "" {
			t.Fatalf("got %q, %v; want nothing: the login failed", body, err)
		}
		if failed, why := wk.s.Failed(); !failed || !strings.Contains(why, "at once") {
			t.Errorf("failed %v, why %q; want failed, the site refusing its sessions at once", failed, why)
		}
		if site.Posts() != session.Strikes+1 {
			t.Errorf("%d logins; want %d", site.Posts(), session.Strikes+1)
		}
	})
}

// The login's POST goes through the fetch's address guard: to a private
// address, in a crawl that does not allow them, it is never sent, and the
// session fails saying why.
func TestALoginToAnAddressTheGuardRefusesIsNotPosted(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := membersite.New("alice", secret, 10, 0)
		_, cfg := serve(t, site)
		sh, err := session.New(context.Background(), s.Client, keysOf("guard"), cfg, fetch.New(fetch.DefaultConfig()), nil, "w")
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close()
		if _, err := sh.Renew(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
		if failed, why := sh.Failed(); !failed || !strings.Contains(why, "address not allowed") || strings.Contains(why, secret) {
			t.Errorf("failed %v, why %q; want failed by the address guard, no password", failed, why)
		}
		if site.Posts() != 0 {
			t.Errorf("%d POSTs to a private address", site.Posts())
		}
	})
}

// A login URL robots.txt disallows is never POSTed to: the session fails,
// and says why.
func TestALoginURLRobotsDisallowsIsNotPosted(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := membersite.New("alice", secret, 10, 0)
		_, cfg := serve(t, site)
		deny := func(_ context.Context, u *url.URL) (bool, error) { return u.Path != "/login", nil }
		wk := newWorker(t, s, "robots", cfg, deny, "w")
		if _, err := wk.s.Renew(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
		if failed, why := wk.s.Failed(); !failed || !strings.Contains(why, "robots.txt") {
			t.Errorf("failed %v, why %q; want failed by robots.txt", failed, why)
		}
		if site.Posts() != 0 {
			t.Errorf("%d POSTs to a disallowed login URL", site.Posts())
		}
	})
}

// The cookies go where a browser's would: to the host that set them,
// not to another.
func TestTheSessionsCookiesGoToTheirDomainOnly(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site := membersite.New("alice", secret, 10, 0)
		srv, cfg := serve(t, site)
		wk := newWorker(t, s, "scope", cfg, nil, "w")
		if _, err := wk.s.Renew(context.Background(), 0); err != nil {
			t.Fatal(err)
		}
		own, _ := url.Parse(srv.URL + "/members/1")
		other, _ := url.Parse(strings.Replace(srv.URL, "127.0.0.1", "127.0.0.2", 1) + "/members/1")
		if len(wk.s.Cookies(own)) != 1 || len(wk.s.Cookies(other)) != 0 {
			t.Errorf("cookies for the site %v, for another host %v; want the session's one, and none", wk.s.Cookies(own), wk.s.Cookies(other))
		}
	})
}

// String and Check never show the form.
func TestTheFormIsNeverShown(t *testing.T) {
	cfg := session.Config{URL: "http://example.com/login", Form: "password=" + secret, LoggedOut: "("}
	for _, text := range []string{cfg.String(), fmt.Sprint(cfg.Check())} {
		if strings.Contains(text, secret) {
			t.Errorf("%q shows the form", text)
		}
	}
	cfg.Form = "%zz" + secret
	cfg.LoggedOut = "/login"
	if err := cfg.Check(); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("a form that is not name=value: %v", err)
	}
}
