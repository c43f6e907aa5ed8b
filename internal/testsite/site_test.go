package testsite

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestTruthIsServedAndStatsCount(t *testing.T) {
	s, err := Start(Config{Hosts: 3, Pages: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	truth := s.Truth()
	flaky := 0
	for _, u := range truth {
		if strings.Contains(u, "/private/") || strings.Contains(u, "/r/") || strings.Contains(u, "/files/") || strings.Contains(u, "/missing/") {
			t.Errorf("truth holds %s", u)
		}
		if strings.Contains(u, "/flaky/") {
			flaky++
		}
	}
	// 3 hosts × (/ + 120 pages) + the flaky pages (/flaky/21 and /flaky/121-… only 21 < 120).
	if want := 3*121 + 3; len(truth) != want || flaky != 3 {
		t.Fatalf("truth has %d URLs (%d flaky), want %d (3 flaky)", len(truth), flaky, want)
	}
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type") + " " + string(b)
	}
	for _, u := range truth {
		code, body := get(u)
		if code == 500 && strings.Contains(u, "/flaky/") {
			code, body = get(u)
		}
		if code != 200 || !strings.HasPrefix(body, "text/html") {
			t.Fatalf("%s: %d %.60s", u, code, body)
		}
	}
	if code, body := get(s.Roots()[0] + "robots.txt"); code != 200 || !strings.Contains(body, "Disallow: /private/") {
		t.Fatalf("robots.txt: %d %s", code, body)
	}
	if code, _ := get(s.Roots()[1] + "robots.txt"); code != 404 {
		t.Fatalf("host 1 robots.txt: %d", code)
	}
	st := s.Stats()
	if st.MaxFetchesPerURL != 2 || len(st.FetchedMoreThanTwice) != 0 || len(st.Disallowed) != 0 {
		t.Fatalf("stats %+v", st)
	}
	total := 0
	for _, h := range st.Hosts {
		total += h.Requests
		if h.MaxPerSecond < 1 {
			t.Fatalf("host stats %+v", h)
		}
	}
	if total != len(truth)+3+2 { // + the flaky retries + two robots.txt
		t.Fatalf("hosts counted %d requests, want %d", total, len(truth)+5)
	}
}

// Named hosts share one listener and are told apart by Host, as in a
// compose network where every name resolves to the site's one address.
func TestNamedHostsShareOneListener(t *testing.T) {
	s, err := Start(Config{Names: []string{"a.site.test", "B.site.test"}, Pages: 30, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	port := strings.TrimPrefix(s.Hosts()[0], "a.site.test:")
	if want := []string{"a.site.test:" + port, "b.site.test:" + port}; strings.Join(s.Hosts(), " ") != strings.Join(want, " ") {
		t.Fatalf("hosts %v, want %v", s.Hosts(), want)
	}
	addr := "127.0.0.1:" + port
	get := func(host, path string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("a.site.test:"+port, "/robots.txt"); code != 200 || !strings.Contains(body, "Disallow: /private/") {
		t.Fatalf("host a robots.txt: %d %q", code, body)
	}
	if code, _ := get("b.site.test:"+port, "/robots.txt"); code != 404 {
		t.Fatalf("host b robots.txt: %d, want 404 (only host 0 has one)", code)
	}
	if code, body := get("b.site.test:"+port, "/p/4.html"); code != 200 || !strings.Contains(body, "http://a.site.test:"+port+"/p/") {
		t.Fatalf("host b page 4: %d, want 200 with its cross-host link to a\n%s", code, body)
	}
	if code, _ := get("c.site.test:"+port, "/"); code != http.StatusMisdirectedRequest {
		t.Fatalf("an unknown host: %d, want 421", code)
	}
	// The site's own endpoints answer on any Host (a test reaching it
	// through a published port asks for 127.0.0.1).
	code, body := get(addr, "/_truth")
	if code != 200 || !strings.Contains(body, `"http://b.site.test:`+port+`/p/29.html"`) {
		t.Fatalf("/_truth through %s: %d %.200s", addr, code, body)
	}
	st := s.Stats()
	if len(st.Fetched) != 1 || st.Hosts["b.site.test:"+port].Requests != 2 || st.Hosts["a.site.test:"+port].Requests != 1 {
		t.Fatalf("stats after one page and two robots.txt requests: %+v", st)
	}
	if _, err := Start(Config{Names: []string{"a.site.test", "a.site.test"}, Listen: "127.0.0.1:0"}); err == nil {
		t.Fatal("a name given twice was accepted")
	}
	if _, err := Start(Config{Names: []string{"a b"}, Listen: "127.0.0.1:0"}); err == nil {
		t.Fatal("a name with a space was accepted")
	}
}

func TestStatsCountWhatIsOverfetched(t *testing.T) {
	st := Stats{Repeated: map[string]int{"http://h/p/1.html": 2, "http://h/flaky/21.html": 2, "http://h/p/2.html": 4}}
	if got := st.Overfetched(0); strings.Join(got, " ") != "http://h/p/1.html (2 times, 1 allowed) http://h/p/2.html (4 times, 1 allowed)" {
		t.Fatalf("Overfetched(0) = %q", got)
	}
	if got := st.Overfetched(3); len(got) != 0 {
		t.Fatalf("Overfetched(3) = %q, want none", got)
	}
	if got := st.Extra(); got != 1+3 {
		t.Fatalf("Extra = %d, want 4 (one for p/1, three for p/2, none for the flaky page's retry)", got)
	}
	if got := Missing([]string{"a", "b", "c"}, Stats{Fetched: []string{"b"}}); strings.Join(got, " ") != "a c" {
		t.Fatalf("Missing = %q", got)
	}
}

// Fetchable is what a correct crawl requests: every URL it served that a
// crawl follows (the truth, redirects, 404s, files), and no private page.
func TestFetchableIsWhatACrawlRequests(t *testing.T) {
	s, err := Start(Config{Hosts: 2, Pages: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	all := s.Fetchable()
	kinds := map[string]int{}
	for _, u := range all {
		for _, k := range []string{"/r/", "/missing/", "/files/", "/private/"} {
			if strings.Contains(u, k) {
				kinds[k]++
			}
		}
	}
	// Per host: /r/7, /r/57, /r/107; /missing/13, 63, 113; /files/3, 28, …, 103 (5).
	if kinds["/r/"] != 6 || kinds["/missing/"] != 6 || kinds["/files/"] != 10 || kinds["/private/"] != 0 {
		t.Fatalf("fetchable kinds %v", kinds)
	}
	if want := len(s.Truth()) + 6 + 6 + 10; len(all) != want {
		t.Fatalf("%d fetchable URLs, want truth + 22 = %d", len(all), want)
	}
}

// A thousand hosts run past one /24 (testsite --hosts 1000 failed: "run
// past the end of the address range"); the addresses skip .0 and .255,
// and every host answers.
func TestHostsPastOneSlash24(t *testing.T) {
	s, err := Start(Config{Hosts: 1000, Pages: 2, ListenBase: "127.1.0.250"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hosts := s.Hosts()
	if len(hosts) != 1000 {
		t.Fatalf("%d hosts", len(hosts))
	}
	seen := map[string]bool{}
	for _, h := range hosts {
		ip := strings.Split(h, ":")[0]
		if strings.HasSuffix(ip, ".0") || strings.HasSuffix(ip, ".255") || seen[ip] {
			t.Fatalf("host address %s: a .0, a .255 or a repeat", ip)
		}
		seen[ip] = true
	}
	if hosts[5] != "127.1.1.1:"+strings.Split(hosts[0], ":")[1] || !strings.HasPrefix(hosts[999], "127.1.4.") {
		t.Fatalf("addresses %s … %s … %s; want 127.1.0.250 on, 127.1.1.1 sixth, 127.1.4.x last", hosts[0], hosts[5], hosts[999])
	}
	for _, h := range []string{hosts[0], hosts[500], hosts[999]} {
		resp, err := http.Get("http://" + h + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s answered %d", h, resp.StatusCode)
		}
	}
	if _, err := hostAddresses([]byte{127, 255, 255, 250}, 10); err == nil {
		t.Fatal("hosts past 127.255.255.254 were given")
	}
}

// Named hosts with a DNS server: each name resolves to the listener, a
// name not of the site does not; a failing host's page answers 503 (with
// Retry-After) once, then itself; with Robots every host has a robots.txt.
func TestNamedHostsResolveThroughTheSitesDNS(t *testing.T) {
	names := Numbered(3, "site.test")
	s, err := Start(Config{Names: names, Listen: "127.0.0.1:0", DNS: "127.0.0.1:0", Pages: 3, FailEvery: 2, Robots: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, s.DNS().Addr())
	}}
	ctx := context.Background()
	for _, n := range names {
		if ips, err := r.LookupHost(ctx, n); err != nil || len(ips) != 1 || ips[0] != "127.0.0.1" {
			t.Fatalf("%s resolves to %v (%v); want the listener, 127.0.0.1", n, ips, err)
		}
	}
	if ips, err := r.LookupHost(ctx, "h9.site.test"); err == nil {
		t.Fatalf("a name not of the site resolved to %v", ips)
	}
	_, port, _ := net.SplitHostPort(s.Hosts()[0])
	get := func(host, path string) *http.Response {
		req, _ := http.NewRequest("GET", "http://127.0.0.1:"+port+path, nil)
		req.Host = host + ":" + port
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if got := get(names[1], "/"); got.StatusCode != 503 || got.Header.Get("Retry-After") != "1" {
		t.Fatalf("the failing host's first answer: %d, Retry-After %q; want 503 and 1", got.StatusCode, got.Header.Get("Retry-After"))
	}
	if got := get(names[1], "/"); got.StatusCode != 200 {
		t.Fatalf("the failing host's second answer: %d; want the page", got.StatusCode)
	}
	if got := get(names[0], "/"); got.StatusCode != 200 {
		t.Fatalf("a host not of the failing minority answered %d", got.StatusCode)
	}
	if got := get(names[2], "/robots.txt"); got.StatusCode != 200 {
		t.Fatalf("with Robots, the third host's robots.txt: %d", got.StatusCode)
	}
}
