package testsite

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A scripted host's pages are shells with no link; /api/links gives the
// links its pages would have had, /app.js builds them. Truth lists every
// page, PlainTruth fewer: what a crawl without a browser finds. The home
// page's script names two traps outside the scope, and what reaches them,
// or comes with a browser's User-Agent, is in the stats.
func TestScriptedHostsServeShellsAndTraps(t *testing.T) {
	s, err := Start(Config{Hosts: 3, Pages: 40, Scripted: 1, ListenBase: "127.0.0.231"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	get := func(u, agent string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("User-Agent", agent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	shell, plain := s.Roots()[2], s.Roots()[0]
	_, _, body := get(shell, "RedCrawl/0.1")
	if strings.Contains(body, "<a ") || !strings.Contains(body, `<script src="/app.js">`) || !strings.Contains(body, "data-probe=") {
		t.Fatalf("the scripted home page: %s", body)
	}
	_, _, plainBody := get(plain, "RedCrawl/0.1")
	if !strings.Contains(plainBody, `<a href="/p/0.html">`) || strings.Contains(plainBody, "app.js") {
		t.Fatalf("a plain home page: %s", plainBody)
	}
	if code, ctype, js := get(shell+"app.js", "RedCrawl/0.1"); code != 200 || ctype != "text/javascript" || !strings.Contains(js, "/api/links") {
		t.Fatalf("/app.js: %d %s %q", code, ctype, js)
	}
	_, _, raw := get(shell+"api/links?page=/p/3.html", "RedCrawl/0.1")
	var hrefs []string
	if err := json.Unmarshal([]byte(raw), &hrefs); err != nil || len(hrefs) < 3 {
		t.Fatalf("/api/links: %q (%v)", raw, err)
	}
	links, _ := s.pageLinks(2, "/p/3.html")
	for i, h := range hrefs {
		if h != links[i].href {
			t.Fatalf("/api/links gave %v; the page's links are %v", hrefs, links)
		}
	}
	if code, _, _ := get(shell+"api/links?page=/nowhere", "RedCrawl/0.1"); code != http.StatusNotFound {
		t.Fatalf("/api/links of no page: %d", code)
	}
	all, plainOnly := s.Truth(), s.PlainTruth()
	if len(plainOnly) >= len(all) {
		t.Fatalf("plain truth %d URLs of %d: want fewer, a browser finds more", len(plainOnly), len(all))
	}
	in := map[string]bool{}
	for _, u := range all {
		in[u] = true
	}
	for _, u := range plainOnly {
		if !in[u] {
			t.Fatalf("plain truth holds %s, which truth does not", u)
		}
	}
	if len(s.Traps()) != 2 {
		t.Fatalf("traps %v; want two", s.Traps())
	}
	get(s.Traps()[0]+"?x=1", "RedCrawl/0.1")
	get(shell+"p/1.html", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/140.0 Safari/537.36")
	st := s.Stats()
	if len(st.Trapped) != 1 || !strings.HasSuffix(st.Trapped[0], "/trap?x=1") {
		t.Errorf("trapped %v; want the one request to the first trap", st.Trapped)
	}
	if len(st.Browser) != 1 || !strings.HasSuffix(st.Browser[0], "/p/1.html") {
		t.Errorf("browser %v; want the one request with a browser's agent", st.Browser)
	}
}
