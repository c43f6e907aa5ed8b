package session

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// LockTTL is how long the lock one worker logs in under is held at most:
// a login's exchange is bounded by the fetch's time (30 s by default), and
// a worker killed holding it holds the others up no longer than this.
const LockTTL = time.Minute

// Poll is how often a worker waiting on another's login reads the
// session again, besides when the login's writer announces it (swap.lua
// publishes on Keys.Session + ":renewed"): for an announcement missed, or
// a holder that died with its lock.
const Poll = 250 * time.Millisecond

// Keys are where a crawl's session lives (keyspace.SessionKey,
// SessionLockKey).
type Keys struct{ Session, Lock string }

// Shared is a worker's view of the crawl's session: the cookie jar its
// requests go with (it is an http.CookieJar: fetch.Config.Jar) and the
// renewal every worker shares. Safe for concurrent use.
type Shared struct {
	c       redis.UniversalClient
	k       Keys
	cfg     Config
	out     *regexp.Regexp
	poster  Poster
	allowed Allowed
	owner   string
	cur     atomic.Pointer[view]
	sub     *redis.PubSub
	changed atomic.Pointer[chan struct{}] // closed when a new session is announced
	used    atomic.Int64                  // the newest generation this worker noted Used
	mu      sync.Mutex                    // one Renew of this process at a time: its loops wait on it, not on Redis
	// beforeLock, in tests, runs between the read of the session and the
	// lock's Obtain: where another worker's login may come.
	beforeLock func()
}

// view is a generation of the session as this worker holds it.
type view struct {
	gen    int64
	failed bool
	why    string
	jar    *cookiejar.Jar
}

// New is the session of a crawl whose login is cfg (Check passed), for
// the worker owner: its logins POST through p, after allowed (robots.txt).
// It reads the session as Redis holds it; the first Renew(0) logs in if
// no worker has.
func New(ctx context.Context, c redis.UniversalClient, k Keys, cfg Config, p Poster, allowed Allowed, owner string) (*Shared, error) {
	out, err := regexp.Compile(cfg.LoggedOut)
	if err != nil {
		return nil, fmt.Errorf("session: --logged-out: %w", err)
	}
	s := &Shared{c: c, k: k, cfg: cfg, out: out, poster: p, allowed: allowed, owner: owner}
	s.cur.Store(&view{jar: jarOf(nil)})
	ch := make(chan struct{})
	s.changed.Store(&ch)
	s.sub = c.Subscribe(ctx, k.Session+":renewed")
	if _, err := s.sub.Receive(ctx); err != nil {
		s.sub.Close()
		return nil, fmt.Errorf("session: listening for new sessions: %w", err)
	}
	go s.listen()
	if _, err := s.refresh(ctx); err != nil {
		s.sub.Close()
		return nil, err
	}
	return s, nil
}

// Close stops listening for new sessions.
func (s *Shared) Close() error { return s.sub.Close() }

// listen wakes the workers waiting on another's login whenever a new
// session is announced, until Close.
func (s *Shared) listen() {
	for range s.sub.Channel() {
		ch := make(chan struct{})
		close(*s.changed.Swap(&ch))
	}
}

// Gen is the generation of the session this worker's requests go with
// now: read it before a request, and give it to Renew if the answer says
// the session is gone.
func (s *Shared) Gen() int64 { return s.cur.Load().gen }

// Failed says whether the crawl's login failed, and why: final for the
// crawl.
func (s *Shared) Failed() (bool, string) {
	v := s.cur.Load()
	return v.failed, v.why
}

// Cookies are the session's cookies for u (http.CookieJar).
func (s *Shared) Cookies(u *url.URL) []*http.Cookie { return s.cur.Load().jar.Cookies(u) }

// SetCookies does nothing (http.CookieJar): the session is the login's
// cookies, which every worker shares; a cookie a page sets is not kept (a
// write per page, racing every other worker's, for a session that lasts
// until the site ends it).
func (s *Shared) SetCookies(*url.URL, []*http.Cookie) {}

// LoggedOut says whether an answer means the session is gone: a 401, or
// a redirect to a URL the crawl's --logged-out pattern matches.
func (s *Shared) LoggedOut(status int, location string) bool {
	return status == http.StatusUnauthorized || (location != "" && s.out.MatchString(location))
}

// Login is the URL the form is POSTed to.
func (s *Shared) Login() string { return s.cfg.URL }

// refresh reads the session from Redis, and holds it if it is newer
// than the one held.
func (s *Shared) refresh(ctx context.Context) (*view, error) {
	snap, err := read(ctx, s.c, s.k.Session)
	if err != nil {
		return nil, err
	}
	v := s.cur.Load()
	if snap.Gen > v.gen {
		v = &view{gen: snap.Gen, failed: snap.Failed, why: snap.Why, jar: jarOf(snap.Hops)}
		s.cur.Store(v)
	}
	return v, nil
}

// Renew returns once the session is newer than generation seen: renewed
// by this call (which logs in, under the lock: loggedIn) or by another
// (which this one waits for). A login that fails renews it too, as failed
// (Failed says why). An error is a login not made: Redis unreachable, or
// the login's answer not had (worth trying again later).
func (s *Shared) Renew(ctx context.Context, seen int64) (loggedIn bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		changed := *s.changed.Load() // before the read: an announcement after it wakes the wait
		v, err := s.refresh(ctx)
		if err != nil {
			return loggedIn, err
		}
		if v.gen > seen {
			return loggedIn, nil
		}
		if s.beforeLock != nil {
			s.beforeLock()
		}
		lock, err := leader.Obtain(ctx, s.c, s.k.Lock, s.owner, LockTTL)
		switch {
		case errors.Is(err, leader.ErrNotObtained): // another worker logs in: wait for its session
			if err := wait(ctx, changed, Poll); err != nil {
				return loggedIn, err
			}
			continue
		case err != nil:
			return loggedIn, fmt.Errorf("session: the login's lock: %w", err)
		}
		made, err := s.loginUnder(ctx, lock, seen)
		loggedIn = loggedIn || made
		lock.Release(context.WithoutCancel(ctx))
		if err != nil && !errors.Is(err, fence.ErrFenced) {
			return loggedIn, err
		}
		// Written, fenced off (the lock passed to another), or another had
		// renewed it first: read it again.
	}
}

// loginUnder logs in as the holder of lock, if the session is still
// generation seen (another worker may have renewed it between the read
// and the lock), and writes the new session; made: it wrote one (a login,
// or the failure that ends the logins).
func (s *Shared) loginUnder(ctx context.Context, lock *leader.Lock, seen int64) (made bool, err error) {
	snap, err := read(ctx, s.c, s.k.Session)
	if err != nil || snap.Gen > seen {
		return false, err // renewed since: the loop reads it
	}
	// A strike: the session before the one that ends now was never used
	// (no request got past the logged-out page with it). Asked of the one
	// before, not of this one: a request of this one may have got past a
	// moment ago and not yet said so, while the one before had this one's
	// whole life to.
	strikes := int64(0)
	if snap.Gen > 1 && snap.Used < snap.Gen-1 {
		strikes = snap.Strikes + 1
	}
	var hops []Hop
	why := ""
	if strikes >= Strikes {
		why = fmt.Sprintf("the site answered with the logged-out page at once after each of %d logins in a row "+
			"(the form is taken, but not the session it gives)", strikes)
	} else {
		lctx, cancel := context.WithTimeout(ctx, LockTTL*3/4)
		defer cancel()
		if hops, why, err = login(lctx, s.poster, s.allowed, s.cfg, s.out); err != nil {
			return false, fmt.Errorf("session: %w", err)
		}
	}
	gen, err := swap(ctx, s.c, s.k.Session, epochKey(s.k.Lock), lock.Epoch(), snap.Gen, strikes, hops, why)
	return err == nil && gen == snap.Gen+1, err
}

// Strikes logins in a row whose sessions no request got past the
// logged-out page with fail the login (after Strikes + 1 logins: each is
// judged at the next one's end): a site that takes the form but not the
// session would otherwise be logged in to for ever.
const Strikes = 3

// Used notes that a request got past the logged-out page with session
// generation gen (once a generation in a worker: one write).
func (s *Shared) Used(ctx context.Context, gen int64) error {
	for {
		last := s.used.Load()
		if gen <= last {
			return nil
		}
		if s.used.CompareAndSwap(last, gen) {
			break
		}
	}
	if err := usedScript.Run(ctx, s.c, []string{s.k.Session}, gen).Err(); err != nil {
		return fmt.Errorf("session: noting the session used: %w", err)
	}
	return nil
}

// wait sleeps d, or until changed is closed or ctx ends.
func wait(ctx context.Context, changed <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed:
		return nil
	case <-t.C:
		return nil
	}
}

// epochKey is the fencing counter of the login's lock.
func epochKey(lock string) string { return leader.EpochKey(lock) }
