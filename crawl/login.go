package crawl

// A crawl behind a login (seed --login-url): every request to the
// login's site goes with the crawl's one session, shared by every worker
// (package session). A URL answered as logged out goes back, with no
// record, and is fetched again once the session is renewed: by this
// worker, under the session's lock, or by another that this one waits
// for. A login that fails stops the site's hosts: each URL of theirs ends
// with a record that says why, and the worker whose login it was says so
// in the log, once for the crawl.

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redcrawl/crawler/session"
	"golang.org/x/net/publicsuffix"
)

// login is a worker's part of the crawl's login: nil for a crawl with
// none.
type login struct {
	s    *session.Shared
	site string         // the login's site: its host's registrable domain (the host itself for an address)
	page *regexp.Regexp // --logged-out: the login's own pages, never crawled
}

// robotsPoll is how often a login waiting on another worker's read of
// the login host's robots.txt asks again.
const robotsPoll = 100 * time.Millisecond

// loginRetry is how long a URL waits when its login could not be made
// (Redis, or the login's server, did not answer): an attempt of its own.
const loginRetry = 5 * time.Second

// openLogin reads the crawl's login, if it has one, and makes fcfg's
// requests go with its session; the login POSTs through its own fetcher,
// after robots.txt.
func (w *Worker) openLogin(ctx context.Context, fcfg *fetch.Config) (*login, error) {
	cfg, err := session.Load(ctx, w.c, keyspace.LoginKey(w.name))
	if err != nil || !cfg.Set() {
		return nil, err
	}
	allowed := func(ctx context.Context, u *url.URL) (bool, error) {
		for {
			v, err := w.robots.Check(ctx, u)
			if !errors.Is(err, politeness.ErrRobotsPending) {
				return v.Allowed, err
			}
			// Another worker reads the host's robots.txt now: the login
			// waits for it (bounded by the login's time), as a fetch would.
			if sleep(ctx, robotsPoll); ctx.Err() != nil {
				return false, ctx.Err()
			}
		}
	}
	k := session.Keys{Session: keyspace.SessionKey(w.name), Lock: keyspace.SessionLockKey(w.name)}
	s, err := session.New(ctx, w.c, k, cfg, fetch.New(*fcfg), allowed, w.opts.ID)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.URL) // Check passed
	fcfg.Jar = s
	return &login{s: s, site: siteOf(u.Hostname()), page: regexp.MustCompile(cfg.LoggedOut)}, nil
}

// closeLogin stops the worker's session listening, if it has one.
func (w *Worker) closeLogin() {
	if w.login != nil {
		w.login.s.Close()
	}
}

// siteOf is host's registrable domain (example.co.uk for
// www.example.co.uk); an address, or a name with none, is its own.
func siteOf(host string) string {
	host = strings.ToLower(host)
	if d, err := publicsuffix.EffectiveTLDPlusOne(host); err == nil {
		return d
	}
	return host
}

// covers says whether u is of the login's site: its requests go with the
// session, and their answers are read for it.
func (lg *login) covers(u *url.URL) bool {
	return lg != nil && siteOf(u.Hostname()) == lg.site
}

// beforeFetch: a URL of the login's site goes with the session, logged in
// first if no worker has yet. It returns the session's generation the
// request goes with; or the URL's end: one of the login's own pages (not
// crawled), or a site whose login failed (its host stopped).
func (pl *fetchLoops) beforeFetch(ctx context.Context, u *url.URL, rec Record) (int64, end) {
	lg := pl.login
	if !lg.covers(u) {
		return 0, end{}
	}
	if lg.page.MatchString(u.String()) {
		rec.Error = "the login's own page (it matches --logged-out): not crawled"
		return 0, finish(rec, frontier.Outcome{Stat: OutcomeSkipped, Refund: true})
	}
	if lg.s.Gen() == 0 {
		if e := pl.renew(ctx, 0, rec); e.ended() {
			return 0, e
		}
	}
	if failed, why := lg.s.Failed(); failed {
		return 0, pl.loginFailed(ctx, u.Host, why, rec)
	}
	return lg.s.Gen(), end{}
}

// afterFetch reads an answer of the login's site: logged out, the URL
// goes back once the session is renewed; else the session is noted used.
func (pl *fetchLoops) afterFetch(ctx context.Context, u *url.URL, gen int64, r *fetch.Result, rec Record) end {
	lg := pl.login
	if !lg.covers(u) {
		return end{}
	}
	if !lg.s.LoggedOut(r.Status, r.Location) {
		if err := lg.s.Used(ctx, gen); err != nil {
			pl.log.Warn("noting the session used failed", "err", err)
		}
		return end{}
	}
	if e := pl.renew(ctx, gen, rec); e.ended() {
		return e
	}
	if failed, why := lg.s.Failed(); failed {
		return pl.loginFailed(ctx, u.Host, why, rec)
	}
	return requeue(0) // fetched again, with the new session
}

// renew renews the session after generation gen (this worker logs in, or
// waits for the one that does); a login not made retries the URL.
func (pl *fetchLoops) renew(ctx context.Context, gen int64, rec Record) end {
	made, err := pl.login.s.Renew(ctx, gen)
	if err != nil {
		return retry(rec, fmt.Sprintf("the crawl's login: %v", err), loginRetry)
	}
	if !made {
		return end{} // another logged in
	}
	text := fmt.Sprintf("logged in at %s (session %d)", pl.login.s.Login(), pl.login.s.Gen())
	if failed, why := pl.login.s.Failed(); failed {
		// The login is made once for the crawl: this is the one line that
		// says it failed.
		text = "the crawl's login failed: " + why
		pl.log.Error(text+"; the URLs of its site are recorded as not fetched", "login", pl.login.s.Login())
	}
	LogEvent(ctx, pl.lf.events, pl.log, events.Event{Kind: events.Login, Worker: pl.worker, Text: text})
	return end{}
}

// loginFailed stops host, whose answers need a session the crawl's login
// cannot give: its URLs end with records that say why (the one held here
// too).
func (pl *fetchLoops) loginFailed(ctx context.Context, host, why string, rec Record) end {
	why = "the crawl's login failed: " + why
	if _, err := pl.lf.hosts.BlockFor(ctx, host, why); err != nil {
		pl.log.Warn("stopping a host whose login failed", "host", host, "err", err)
	}
	rec.Error = "not fetched: " + why
	return finish(rec, frontier.Outcome{Stat: OutcomeSkipped, Refund: true})
}
