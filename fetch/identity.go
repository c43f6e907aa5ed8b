package fetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// identity is what a request says of the crawler: its User-Agent and the
// crawl's headers, which a live change of the settings replaces
// (SetIdentity) while requests are made.
type identity struct {
	userAgent string
	headers   http.Header
}

// SetIdentity replaces the User-Agent and the headers sent with every
// request from now on (the crawl's settings changed: 'crawler set').
// headers must pass CheckHeader; it is not modified after.
func (f *Fetcher) SetIdentity(userAgent string, headers http.Header) {
	f.ident.Store(&identity{userAgent: userAgent, headers: headers})
}

// newRequest is the GET of rawURL with the crawl's headers, extra's, the
// user agent and an Accept, and, through a proxy, the proxy it goes to in
// its context (proxyKey: the dial guard checks the address the proxy
// connects to).
func (f *Fetcher) newRequest(ctx context.Context, rawURL string, extra http.Header) (*http.Request, error) {
	return f.newRequestOf(ctx, http.MethodGet, rawURL, nil, extra)
}

// newRequestOf is newRequest of any method, with body.
func (f *Fetcher) newRequestOf(ctx context.Context, method, rawURL string, body io.Reader, extra http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return nil, &Error{Err: fmt.Errorf("fetch: %w", err)}
	}
	id := f.ident.Load()
	for name, values := range id.headers {
		req.Header[name] = values
	}
	for name, values := range extra {
		req.Header[name] = values
	}
	req.Header.Set("User-Agent", id.userAgent)
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5")
	}
	if f.cfg.Proxy == nil {
		return req, nil
	}
	pu, err := f.cfg.Proxy(req)
	if err != nil {
		return nil, &Error{Err: fmt.Errorf("%w for %s: %w", ErrProxy, req.URL.Redacted(), err)}
	}
	if pu != nil {
		req = req.WithContext(context.WithValue(ctx, proxyKey{}, pu))
	}
	return req, nil
}
