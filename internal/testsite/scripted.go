package testsite

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"strings"
)

// Scripted hosts (Config.Scripted) are application shells: each page is an
// empty <div id="app"> and a script, /app.js, that asks /api/links for the
// page's links (JSON) and writes them into the document as anchors. A
// plain fetch finds no link on them; a browser finds the same links the
// other hosts serve as HTML. Truth lists every page, those only a browser
// finds included; PlainTruth lists what a crawl that does not render
// fetches.
//
// The scripted host's home page also tries to leave the crawl's scope:
// its script fetches a URL on another port of its own address and one on
// a loopback address no seed names. Both are traps the site listens on,
// and every request that reaches one is in Stats.Trapped: a crawler that
// renders must refuse both (they are other hosts, outside the scope).
//
// A request whose User-Agent is a browser's (Chrome's or "Mozilla/…") is
// in Stats.Browser: a crawler whose browser makes no request itself, but
// has every request made by its own fetcher, leaves it empty.

// appJS builds a shell's links from /api/links, then, on a page that says
// so (data-probe), tries the URLs it lists.
const appJS = `(function () {
  var app = document.getElementById('app');
  fetch('/api/links?page=' + encodeURIComponent(app.getAttribute('data-page')))
    .then(function (r) { return r.json(); })
    .then(function (hrefs) {
      hrefs.forEach(function (h) {
        var a = document.createElement('a');
        a.setAttribute('href', h);
        a.textContent = 'link';
        app.appendChild(a);
      });
      app.setAttribute('data-done', String(hrefs.length));
    });
  (app.getAttribute('data-probe') || '').split(' ').forEach(function (u) {
    if (u) { fetch(u, {mode: 'no-cors'}).catch(function () {}); }
  });
})();
`

// scripted reports whether host hi is an application shell.
func (s *Site) scripted(hi int) bool {
	return s.cfg.Scripted > 0 && hi >= len(s.hosts)-s.cfg.Scripted
}

// serveScripted answers a scripted host's own paths (/app.js,
// /api/links), and reports whether p was one.
func (s *Site) serveScripted(w http.ResponseWriter, r *http.Request, hi int) bool {
	switch r.URL.Path {
	case "/app.js":
		w.Header().Set("Content-Type", "text/javascript")
		io.WriteString(w, appJS)
	case "/api/links":
		links, ok := s.pageLinks(hi, r.URL.Query().Get("page"))
		if !ok {
			http.NotFound(w, r)
			return true
		}
		hrefs := []string{}
		for _, l := range links {
			if l.href != "" {
				hrefs = append(hrefs, l.href)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(hrefs)
	default:
		return false
	}
	return true
}

// writeShell writes page p of scripted host hi: no link, a script that
// makes them.
func (s *Site) writeShell(b *strings.Builder, hi int, p string) {
	probe := ""
	if p == "/" {
		probe = strings.Join(s.traps, " ")
	}
	fmt.Fprintf(b, `<div id="app" data-page="%s" data-probe="%s"></div><script src="/app.js"></script>`+"\n",
		html.EscapeString(p), html.EscapeString(probe))
}

// startTraps listens where the scripted home page's script reaches out
// of scope: another port of the last host's address, and the loopback
// address after the hosts'.
func (s *Site) startTraps(next string) error {
	if s.cfg.Scripted == 0 {
		return nil
	}
	last, _, err := net.SplitHostPort(s.hosts[len(s.hosts)-1])
	if err != nil {
		return err
	}
	for _, ip := range []string{last, next} {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			return fmt.Errorf("testsite: a trap on %s: %w", ip, err)
		}
		u := "http://" + l.Addr().String() + "/trap"
		s.traps = append(s.traps, u)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.trapped = append(s.trapped, "http://"+r.Host+r.URL.RequestURI())
			s.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		})}
		s.servers = append(s.servers, srv)
		go srv.Serve(l)
	}
	return nil
}

// Traps are the URLs the scripted home page's script tries, outside the
// crawl's scope.
func (s *Site) Traps() []string { return s.traps }

// browserAgent reports whether a User-Agent is a browser's.
func browserAgent(ua string) bool {
	return strings.Contains(ua, "Chrome") || strings.HasPrefix(ua, "Mozilla/")
}

// PlainTruth is what a crawl that does not render fetches of Truth: a
// scripted host's pages, reached by a link from another host or as a
// seed, give no link of their own.
func (s *Site) PlainTruth() []string { truth, _ := s.walkAs(true); return truth }

// scriptedPageLinks are the links a crawl finds on page p of host hi:
// none on a scripted host's page when it does not render.
func (s *Site) scriptedPageLinks(hi int, p string, plain bool) ([]link, bool) {
	links, ok := s.pageLinks(hi, p)
	if ok && plain && s.scripted(hi) {
		return nil, true
	}
	return links, ok
}
