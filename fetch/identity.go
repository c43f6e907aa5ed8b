package fetch

import "net/http"

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
