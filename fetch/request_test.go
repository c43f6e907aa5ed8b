package fetch_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/redcrawl/crawler/fetch"
)

// A crawl's headers go with every request, beside its User-Agent; the
// headers HTTP manages cannot be set.
func TestHeadersAreSent(t *testing.T) {
	var key, ua atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key.Store(r.Header.Get("X-Api-Key"))
		ua.Store(r.Header.Get("User-Agent"))
	}))
	defer srv.Close()
	cfg := fetch.DefaultConfig()
	cfg.AllowPrivate, cfg.Headers = true, http.Header{"X-Api-Key": {"k1"}}
	if _, err := fetch.New(cfg).Fetch(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	if key.Load() != "k1" || ua.Load() != cfg.UserAgent {
		t.Fatalf("server saw X-Api-Key %q, User-Agent %q", key.Load(), ua.Load())
	}
	for _, bad := range []string{"User-Agent", "host", "Content-Length", "Bad Name", ""} {
		if err := fetch.CheckHeader(bad); err == nil {
			t.Errorf("CheckHeader(%q) accepted", bad)
		}
	}
	if err := fetch.CheckHeader("Authorization"); err != nil {
		t.Fatal(err)
	}
}

// With Cookies, a cookie a host sets goes back to it; without, it does not.
func TestCookiesPerHost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "s1", Path: "/"})
			return
		}
		c, err := r.Cookie("session")
		if err == nil {
			io.WriteString(w, c.Value)
		}
	}))
	defer srv.Close()
	for _, on := range []bool{false, true} {
		cfg := fetch.DefaultConfig()
		cfg.AllowPrivate, cfg.Cookies = true, on
		cfg.Keep = func(string) bool { return true }
		f := fetch.New(cfg)
		if _, err := f.Fetch(context.Background(), srv.URL+"/set"); err != nil {
			t.Fatal(err)
		}
		res, err := f.FetchBody(context.Background(), srv.URL+"/get")
		if err != nil {
			t.Fatal(err)
		}
		if got := string(res.Body); (got == "s1") != on {
			t.Errorf("cookies %v: the host got back %q", on, got)
		}
	}
}
