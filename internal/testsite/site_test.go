package testsite

import (
	"io"
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
