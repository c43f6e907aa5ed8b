package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/dashboard"
	"github.com/redcrawl/crawler/internal/redistest"
)

// post sends a control to srv as a browser of origin would (origin ""
// sends none), with the token in the Authorization header when token is
// not "", and returns the status and body.
func post(t *testing.T, srv *httptest.Server, path, origin, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// The controls, on both Redis kinds: with the token and from the page's
// own origin, pause and resume the crawl and block a host, each an event
// naming the dashboard; without the token (or with it only in the query),
// from another origin, or by GET, refused with nothing changed; and a
// dashboard without --control (or without a token) has none.
func TestTheDashboardsControlsNeedTheTokenAndItsOwnOrigin(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		seed, _ := url.Parse("http://a.example/")
		if _, err := admin.Seed(ctx, s.Client, "c", settings.Default(), []*url.URL{seed}); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(dashboard.New(s.Client, dashboard.Config{Crawl: "c", Token: "tok", Control: true, Every: 10 * time.Millisecond}))
		defer srv.Close()
		own := srv.URL // the page's origin: scheme and host, as a browser sends it
		paused := func() bool {
			t.Helper()
			st, err := status.Read(ctx, s.Client, "c")
			if err != nil {
				t.Fatal(err)
			}
			return st.Hold != nil
		}
		for _, c := range []struct {
			name, origin, token string
			want                int
		}{
			{"no token", own, "", http.StatusUnauthorized},
			{"a wrong token", own, "nope", http.StatusUnauthorized},
			{"another origin", "http://evil.example", "tok", http.StatusForbidden},
		} {
			if code, body := post(t, srv, "/api/control/pause", c.origin, c.token, ""); code != c.want || paused() {
				t.Errorf("%s: %d %q, paused %v; want %d and the crawl running", c.name, code, body, paused(), c.want)
			}
		}
		if code, _ := post(t, srv, "/api/control/pause?token=tok", own, "", ""); code != http.StatusForbidden || paused() {
			t.Errorf("the token in the query: %d; want refused (a link or a form can carry a query)", code)
		}
		if res, err := http.Get(srv.URL + "/api/control/pause?token=tok"); err != nil || res.StatusCode == http.StatusOK || paused() {
			t.Errorf("GET: %v, %v; want no change", res.Status, err)
		}
		if code, body := post(t, srv, "/api/control/pause", own, "tok", ""); code != http.StatusOK || !strings.Contains(body, "the crawl is paused") || !paused() {
			t.Fatalf("pause: %d %q; want the crawl paused", code, body)
		}
		if code, body := post(t, srv, "/api/control/resume", "", "tok", ""); code != http.StatusOK || paused() {
			t.Errorf("resume (no Origin, as a script's client): %d %q; want the crawl running", code, body)
		}
		if code, body := post(t, srv, "/api/control/host", own, "tok", `{"host": "a.example", "action": "block"}`); code != http.StatusOK || !strings.Contains(body, "host a.example: blocked") {
			t.Errorf("block: %d %q", code, body)
		}
		if code, _ := post(t, srv, "/api/control/host", own, "tok", `{"host": "a.example", "action": "explode"}`); code != http.StatusBadRequest {
			t.Errorf("an unknown action: %d; want 400", code)
		}
		st, err := status.Read(ctx, s.Client, "c")
		if err != nil {
			t.Fatal(err)
		}
		var byDashboard int
		for _, e := range st.Events {
			if strings.Contains(e.Text, "the dashboard (127.0.0.1)") {
				byDashboard++
			}
		}
		if byDashboard < 3 {
			t.Errorf("%d events name the dashboard; want the pause, the resume and the block: %+v", byDashboard, st.Events)
		}
		if len(st.HostRules) != 1 || !st.HostRules[0].Blocked {
			t.Errorf("host rules %+v; want a.example blocked", st.HostRules)
		}
		if code, body := post(t, srv, "/api/control/host", own, "tok", `{"host": "a.example", "action": "clear"}`); code != http.StatusOK || !strings.Contains(body, "its pause lifted") {
			t.Errorf("clear: %d %q", code, body)
		}
		if st, err := status.Read(ctx, s.Client, "c"); err != nil || len(st.HostRules) != 0 {
			t.Errorf("after clear: rules %+v (%v); want the block gone", st.HostRules, err)
		}
		for _, cfg := range []dashboard.Config{{Crawl: "c", Token: "tok"}, {Crawl: "c", Control: true}} {
			ro := httptest.NewServer(dashboard.New(s.Client, cfg))
			if code, _ := post(t, ro, "/api/control/pause", ro.URL, "tok", ""); code == http.StatusOK || paused() {
				t.Errorf("%+v: a control answered %d; want none served", cfg, code)
			}
			ro.Close()
		}
	})
}
