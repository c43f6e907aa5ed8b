package session

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"

	"github.com/redcrawl/crawler/fetch"
	"golang.org/x/net/publicsuffix"
)

// A Poster makes a form's exchange: fetch.Fetcher's PostForm.
type Poster interface {
	PostForm(ctx context.Context, rawURL, form string, jar http.CookieJar) ([]fetch.Hop, error)
}

// Allowed asks whether a URL may be requested (robots.txt); nil allows
// every URL.
type Allowed func(ctx context.Context, u *url.URL) (bool, error)

// login POSTs the crawl's form and judges the answer: the cookies it set
// (hops), or why the login failed (the form refused, the logged-out page
// answered, no cookie set, robots.txt disallows the form's URL, an
// address the guard refuses); err is an answer not had (a timeout, a
// reset: worth trying again later). Neither why nor err quotes the form.
func login(ctx context.Context, p Poster, allowed Allowed, cfg Config, out *regexp.Regexp) (hops []Hop, why string, err error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Sprintf("the login URL %q is not a URL", cfg.URL), nil
	}
	if allowed != nil {
		ok, err := allowed(ctx, u)
		if err != nil {
			return nil, "", fmt.Errorf("robots.txt of the login URL: %w", err)
		}
		if !ok {
			return nil, fmt.Sprintf("robots.txt disallows the login URL %s", cfg.URL), nil
		}
	}
	jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List}) // never fails
	got, err := p.PostForm(ctx, cfg.URL, cfg.Form, jar)
	if err != nil {
		if fetch.IsTransient(err) {
			return nil, "", fmt.Errorf("the login's POST to %s: %w", cfg.URL, err)
		}
		return nil, fmt.Sprintf("the login's POST to %s: %v", cfg.URL, err), nil
	}
	last := got[len(got)-1]
	cookies := 0
	for _, h := range got {
		hops = append(hops, Hop{URL: h.URL, SetCookies: h.SetCookies})
		cookies += len(h.SetCookies)
	}
	switch {
	case last.Status >= 400:
		return nil, fmt.Sprintf("the login was refused: HTTP %d at %s", last.Status, last.URL), nil
	case out.MatchString(last.URL) || (last.Location != "" && out.MatchString(last.Location)):
		return nil, fmt.Sprintf("the login ended at the logged-out page %s (matches --logged-out)", last.URL), nil
	case last.Status >= 300:
		return nil, fmt.Sprintf("the login ended at a redirect without a target, HTTP %d at %s", last.Status, last.URL), nil
	case cookies == 0:
		return nil, fmt.Sprintf("the login at %s set no cookie", cfg.URL), nil
	}
	return hops, "", nil
}
