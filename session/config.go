package session

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Config is a crawl's login: the URL the form is POSTed to, the form
// (name=value&…, as a browser sends it: a secret), and the pattern of a
// logged-out answer's URL (a redirect's target; a 401 is logged out too).
type Config struct {
	URL       string
	Form      string
	LoggedOut string
}

// String is the login without its form.
func (c Config) String() string {
	return fmt.Sprintf("login at %s (form of %d bytes, not shown; logged out: %q)", c.URL, len(c.Form), c.LoggedOut)
}

// Set reports whether the crawl has a login.
func (c Config) Set() bool { return c.URL != "" }

// MaxForm bounds a login form.
const MaxForm = 64 << 10

// Check refuses a login that cannot work: a URL that is not http or
// https, a form that is not name=value&…, a pattern that does not
// compile. Its errors never quote the form.
func (c Config) Check() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--login-url %q is not an http or https URL", c.URL)
	}
	if c.Form == "" {
		return errors.New("--login-form is empty: give name=value&… or @FILE")
	}
	if len(c.Form) > MaxForm {
		return fmt.Errorf("--login-form is %d bytes; at most %d", len(c.Form), MaxForm)
	}
	if _, err := url.ParseQuery(c.Form); err != nil {
		return errors.New("--login-form is not name=value&… (URL-encoded, as a browser sends a form)")
	}
	if c.LoggedOut == "" {
		return errors.New("--logged-out is needed with --login-url: the pattern of the URL a logged-out request is sent to")
	}
	if _, err := regexp.Compile(c.LoggedOut); err != nil {
		return fmt.Errorf("--logged-out %q: %v", c.LoggedOut, err)
	}
	return nil
}

// ReadForm is a --login-form's value: itself, or the contents of FILE
// for @FILE (a trailing newline dropped), so that the secret need not be
// on a command line other users of the machine can read.
func ReadForm(v string) (string, error) {
	name, ok := strings.CutPrefix(v, "@")
	if !ok {
		return v, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("--login-form @%s: %v", name, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// Save keeps the crawl's login in Redis at key (keyspace.LoginKey),
// replacing any.
func Save(ctx context.Context, c redis.Cmdable, key string, cfg Config) error {
	if err := c.HSet(ctx, key, "url", cfg.URL, "form", cfg.Form, "logged_out", cfg.LoggedOut).Err(); err != nil {
		return fmt.Errorf("session: keeping the login: %w", err)
	}
	return nil
}

// Load is the crawl's login as kept at key; a Config not Set when the
// crawl has none.
func Load(ctx context.Context, c redis.Cmdable, key string) (Config, error) {
	v, err := c.HGetAll(ctx, key).Result()
	if err != nil {
		return Config{}, fmt.Errorf("session: reading the login: %w", err)
	}
	cfg := Config{URL: v["url"], Form: v["form"], LoggedOut: v["logged_out"]}
	if cfg.Set() {
		if err := cfg.Check(); err != nil {
			return Config{}, fmt.Errorf("session: the login kept in Redis: %w", err)
		}
	}
	return cfg, nil
}

// A State is what may be shown of a crawl's login: its URL, the
// session's generation (0: no login yet), and whether it failed and why.
// Never the form, never the cookies.
type State struct {
	URL    string `json:"url"`
	Gen    int64  `json:"session"`
	Failed bool   `json:"failed,omitempty"`
	Why    string `json:"why,omitempty"`
}

// Describe is the state of the crawl's login kept at loginKey, its
// session at sessionKey; nil when the crawl has no login.
func Describe(ctx context.Context, c redis.Cmdable, loginKey, sessionKey string) (*State, error) {
	u, err := c.HGet(ctx, loginKey, "url").Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("session: reading the login: %w", err)
	}
	snap, err := read(ctx, c, sessionKey)
	if err != nil {
		return nil, err
	}
	return &State{URL: u, Gen: snap.Gen, Failed: snap.Failed, Why: snap.Why}, nil
}

// Line is the state in a line of 'crawler status'.
func (s State) Line() string {
	switch {
	case s.Failed:
		return fmt.Sprintf("at %s: failed, %s; the site's URLs are recorded as not fetched (seed --login-form again to try another)", s.URL, s.Why)
	case s.Gen == 0:
		return fmt.Sprintf("at %s: not logged in yet (the first worker to reach the site logs in)", s.URL)
	}
	return fmt.Sprintf("at %s: session %d (each a login; a logged-out answer renews it, once for every worker)", s.URL, s.Gen)
}
