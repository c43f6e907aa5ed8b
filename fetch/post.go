package fetch

// A form's POST and the redirects it leads through: the login of a crawl
// behind one (package session), made as a browser makes it, with every
// hop through the same address guard, proxy and bounds as a fetch.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// A Hop is one response of a form's exchange: the URL asked, its status,
// its redirect's target (Location, resolved), and the Set-Cookie headers
// it sent, as sent.
type Hop struct {
	URL        string
	Status     int
	Location   string
	SetCookies []string
}

// MaxHops bounds the redirects a form's exchange follows.
const MaxHops = 10

// PostForm POSTs form (application/x-www-form-urlencoded, as given) to
// rawURL and follows the redirects of that exchange as a browser does (a
// 307 or 308 repeats the POST; any other redirect is a GET), MaxHops at
// most. jar sends its cookies with each request and takes those each
// response sets (a new, empty jar for a login). It returns the hops in
// order, the last one the answer the exchange ended with; an error means
// no usable answer (as Fetch's).
func (f *Fetcher) PostForm(ctx context.Context, rawURL, form string, jar http.CookieJar) ([]Hop, error) {
	method, body := http.MethodPost, form
	var hops []Hop
	for len(hops) <= MaxHops {
		hop, err := f.hop(ctx, method, rawURL, body, jar)
		if err != nil {
			return hops, err
		}
		hops = append(hops, hop)
		if hop.Location == "" || hop.Status < 300 || hop.Status > 399 {
			return hops, nil
		}
		if hop.Status != http.StatusTemporaryRedirect && hop.Status != http.StatusPermanentRedirect {
			method, body = http.MethodGet, ""
		}
		rawURL = hop.Location
	}
	return hops, &Error{Err: fmt.Errorf("fetch: more than %d redirects after the POST to %s", MaxHops, hops[0].URL)}
}

// hop is one request of a form's exchange; its body is read (bounded)
// and dropped.
func (f *Fetcher) hop(ctx context.Context, method, rawURL, form string, jar http.CookieJar) (Hop, error) {
	var body io.Reader
	extra := http.Header{}
	if method == http.MethodPost {
		body = strings.NewReader(form)
		extra.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req, err := f.newRequestOf(ctx, method, rawURL, body, extra)
	if err != nil {
		return Hop{}, err
	}
	for _, c := range jar.Cookies(req.URL) {
		req.AddCookie(c)
	}
	resp, err := f.bare().Do(req)
	if err != nil {
		return Hop{}, classify(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, f.cfg.MaxBody)) // so the connection is reused
	jar.SetCookies(req.URL, resp.Cookies())
	hop := Hop{URL: req.URL.String(), Status: resp.StatusCode, SetCookies: resp.Header.Values("Set-Cookie")}
	if loc := resp.Header.Get("Location"); loc != "" {
		if u, err := req.URL.Parse(loc); err == nil {
			hop.Location = u.String()
		}
	}
	return hop, nil
}

// bare is the Fetcher's client without its cookie jar: a form's exchange
// keeps its cookies in the jar it is given.
func (f *Fetcher) bare() *http.Client {
	c := *f.client
	c.Jar = nil
	return &c
}
