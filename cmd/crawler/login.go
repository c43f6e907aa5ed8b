package main

// seed --login-url, --login-form, --logged-out: a crawl behind a login
// (package session). The form is a secret: it is read from the flag or a
// file, checked, kept in Redis for the workers, and never printed.

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redcrawl/crawler/session"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

func loginFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "login-url", Usage: "log in before crawling: POST --login-form to this URL (its redirects followed, " +
			"through the same address guard and robots.txt as a fetch); every worker's requests to its site then go with the session's cookies"},
		&cli.StringFlag{Name: "login-form", Usage: "the login form, name=value&… URL-encoded as a browser sends it, or @FILE to read it from " +
			"FILE (keeps the password off the command line). A secret: kept in the crawl's Redis for its workers, never printed"},
		&cli.StringFlag{Name: "logged-out", Usage: "a regular expression for where a logged-out request is sent (a redirect's target, " +
			"e.g. '/login'); such an answer, or a 401, renews the session and fetches the URL again. URLs it matches are not crawled"},
	}
}

// loginOf is the login the seed's flags give (not Set without
// --login-url), checked; its errors never quote the form.
func loginOf(c *cli.Context) (session.Config, error) {
	if !c.IsSet("login-url") {
		if c.IsSet("login-form") || c.IsSet("logged-out") {
			return session.Config{}, fmt.Errorf("--login-form and --logged-out need --login-url")
		}
		return session.Config{}, nil
	}
	form, err := session.ReadForm(c.String("login-form"))
	if err != nil {
		return session.Config{}, err
	}
	cfg := session.Config{URL: c.String("login-url"), Form: form, LoggedOut: c.String("logged-out")}
	return cfg, cfg.Check()
}

// checkLoginRobots refuses a login URL robots.txt disallows for the
// crawl's user agent (s); a robots.txt not had now is said, and left to
// the workers, which ask it again before they log in.
func checkLoginRobots(ctx context.Context, warn io.Writer, s settings.Settings, cfg session.Config) error {
	u, _ := url.Parse(cfg.URL) // Check passed
	fc := fetch.DefaultConfig()
	fc.UserAgent, fc.AllowPrivate = s.UserAgent, s.AllowPrivate
	f := fetch.New(fc)
	at := u.Scheme + "://" + u.Host + "/robots.txt"
	for range 5 { // RFC 9309: five redirects
		r, err := f.FetchBody(ctx, at)
		switch {
		case err != nil || r.Status == 429 || r.Status >= 500:
			why := fmt.Sprint(err)
			if err == nil {
				why = fmt.Sprintf("HTTP %d", r.Status)
			}
			fmt.Fprintf(warn, "seed: robots.txt of %s not read now (%s): the workers ask it before they log in\n", u.Host, why)
			return nil
		case r.Status >= 300 && r.Status < 400 && r.Location != "":
			at = r.Location
			continue
		}
		path := u.EscapedPath()
		if u.RawQuery != "" {
			path += "?" + u.RawQuery
		}
		if !politeness.RobotsFromStatus(r.Status, r.Body).Allowed(s.AgentToken(), path) {
			return fmt.Errorf("robots.txt of %s disallows the login URL %s for %q: a crawl that keeps to robots.txt cannot log in there",
				u.Host, cfg.URL, s.AgentToken())
		}
		return nil
	}
	fmt.Fprintf(warn, "seed: robots.txt of %s redirects more than 5 times: the workers ask it before they log in\n", u.Host)
	return nil
}

// saveLogin keeps the crawl's login for its workers, and forgets the
// session of any login before it (a new password is tried afresh).
func saveLogin(ctx context.Context, rdb redis.UniversalClient, name string, cfg session.Config) error {
	if err := session.Save(ctx, rdb, keyspace.LoginKey(name), cfg); err != nil {
		return err
	}
	return rdb.Del(ctx, keyspace.SessionKey(name)).Err()
}
