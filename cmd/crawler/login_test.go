package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// seed --login-url: a login URL robots.txt disallows is refused in one
// line, nothing seeded; one it allows is kept for the workers, the form
// read from its file, and the password printed nowhere.
func TestSeedKeepsALoginAndRefusesOneRobotsDisallows(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			fmt.Fprint(w, "User-agent: *\nDisallow: /private-login\n")
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	const secret = "pw-never-printed-42"
	form := filepath.Join(t.TempDir(), "form.txt")
	os.WriteFile(form, []byte("user=alice&password="+secret+"\n"), 0o600)
	mr := miniredis.RunT(t)
	redisURL := "redis://" + mr.Addr() + "/0"

	out, errOut, err := run(t, "--redis", redisURL, "seed", "--allow-private", "--login-url", srv.URL+"/private-login",
		"--login-form", "@"+form, "--logged-out", "/login", srv.URL+"/")
	if err == nil || !strings.Contains(err.Error(), "robots.txt of") || !strings.Contains(err.Error(), "disallows the login URL") {
		t.Fatalf("a disallowed login URL: %v; want it refused, robots.txt named", err)
	}
	if keys := mr.Keys(); len(keys) != 0 {
		t.Errorf("a refused seed left keys %v", keys)
	}
	printed := out + errOut + err.Error()

	out, errOut, err = run(t, "--redis", redisURL, "seed", "--allow-private", "--crawl", "in", "--login-url", srv.URL+"/login",
		"--login-form", "@"+form, "--logged-out", "/login", srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	printed += out + errOut
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	kept := c.HGetAll(context.Background(), keyspace.LoginKey("in")).Val()
	if kept["url"] != srv.URL+"/login" || kept["form"] != "user=alice&password="+secret || kept["logged_out"] != "/login" {
		t.Errorf("the login kept: %v; want the URL, the file's form without its newline, the pattern", kept)
	}
	if strings.Contains(printed, secret) {
		t.Errorf("the password is in the output:\n%s", printed)
	}
}
