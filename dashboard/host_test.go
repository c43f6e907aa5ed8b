package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/dashboard"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A request whose Host is a name the dashboard was not given (a
// DNS-rebinding page, its name resolved to the dashboard's address) gets
// nothing of the crawl, with or without a token; its address, localhost
// and the names given by the operator get the page, never in a frame.
func TestTheDashboardAnswersOnlyItsOwnNames(t *testing.T) {
	s := redistest.Mini(t)
	for _, token := range []string{"", "secret"} {
		srv := httptest.NewServer(dashboard.New(s.Client, dashboard.Config{Crawl: "d", Token: token, Hosts: []string{"crawl.example.org"}}))
		port := srv.URL[strings.LastIndex(srv.URL, ":"):]
		for _, c := range []struct {
			host string
			ok   bool
		}{
			{"127.0.0.1" + port, true}, {"localhost" + port, true}, {"[::1]" + port, true}, {"10.1.2.3" + port, true},
			{"crawl.example.org" + port, true}, {"CRAWL.example.org.", true}, {"dash.localhost" + port, true},
			{"attacker.example" + port, false}, {"attacker.example", false}, {"crawl.example.org.attacker.example", false},
			{"127.0.0.1.nip.io" + port, false},
		} {
			for _, path := range []string{"/api/state?token=secret", "/"} {
				req, _ := http.NewRequest("GET", srv.URL+path, nil)
				req.Host = c.host
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				refused := res.StatusCode == http.StatusMisdirectedRequest
				if refused == c.ok {
					t.Errorf("token %q: Host %q, %s: status %d; want allowed %v", token, c.host, path, res.StatusCode, c.ok)
				}
				if c.ok && (res.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")) {
					t.Errorf("Host %q, %s: X-Frame-Options %q, CSP %q; want the page never framed", c.host, path,
						res.Header.Get("X-Frame-Options"), res.Header.Get("Content-Security-Policy"))
				}
			}
		}
		srv.Close()
	}
}
