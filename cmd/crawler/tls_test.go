package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

// crawlAll runs every command that talks to Redis against one --redis
// with the given global flags: seed, work to the end, status, export and
// reset; each must succeed, and what they say must add up. It returns all
// they printed.
func crawlAll(t *testing.T, global ...string) string {
	t.Helper()
	var all strings.Builder
	site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 30})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	do := func(args ...string) string {
		t.Helper()
		out, errOut, err := run(t, append(append([]string{}, global...), args...)...)
		if err != nil {
			t.Fatalf("crawler %s: %v\n%s", strings.Join(args, " "), err, errOut)
		}
		all.WriteString(out + errOut)
		return out + errOut
	}
	do(append([]string{"seed", "--allow-private", "--rate", "inf"}, site.Roots()...)...)
	dir := t.TempDir()
	do("work", "--exit-when-done", "-c", "4", "--out", filepath.Join(dir, "out.jsonl"), "--warc-dir", filepath.Join(dir, "warc"))
	if missing := site.Missing(); len(missing) > 0 {
		t.Fatalf("%d truth URLs never fetched", len(missing))
	}
	if st := do("status"); !strings.Contains(st, "done") {
		t.Fatalf("status:\n%s", st)
	}
	do("export", "--out", filepath.Join(dir, "export.jsonl"))
	if data, err := os.ReadFile(filepath.Join(dir, "export.jsonl")); err != nil || strings.Count(string(data), "\n") < len(site.Truth()) {
		t.Fatalf("export: %d lines, %v; want a record a truth URL at least", strings.Count(string(data), "\n"), err)
	}
	do("reset")
	return all.String()
}

// Redis over TLS: every command works against a real redis-server's TLS
// port with the test's CA given by --redis-ca (or CRAWLER_REDIS_CA), and
// a client certificate when the server asks for one; a wrong CA, a
// missing client certificate, or TLS flags without rediss:// are one
// line each, naming what to do, showing no file's contents.
func TestRedisOverTLS(t *testing.T) {
	t.Run("server certificate", func(t *testing.T) {
		s := redistest.RealTLS(t, false)
		crawlAll(t, "--redis", "rediss://"+s.TLSAddr+"/0", "--redis-ca", s.CAFile, "--crawl", "tls")
		t.Setenv("CRAWLER_REDIS_CA", s.CAFile)
		for _, args := range [][]string{{"seed", "http://a.example/"}, {"reset"}} {
			if _, errOut, err := run(t, append([]string{"--redis", "rediss://" + s.TLSAddr + "/0", "--crawl", "env"}, args...)...); err != nil {
				t.Fatalf("%s with CRAWLER_REDIS_CA: %v\n%s", args[0], err, errOut)
			}
		}
	})
	t.Run("client certificate", func(t *testing.T) {
		s := redistest.RealTLS(t, true)
		url := "rediss://" + s.TLSAddr + "/0"
		crawlAll(t, "--redis", url, "--redis-ca", s.CAFile, "--redis-cert", s.CertFile, "--redis-key", s.KeyFile, "--crawl", "mtls")
		_, _, err := run(t, "--redis", url, "--redis-ca", s.CAFile, "status")
		if err == nil || !strings.Contains(err.Error(), "--redis-cert") {
			t.Fatalf("no client certificate for a server that wants one: %v; want a hint naming --redis-cert", err)
		}
	})
	t.Run("password", func(t *testing.T) {
		// A server that answers (here, that a password is wanted) has a
		// working connection: the error says what it said and how to give
		// a password, and no TLS hint sends the user the wrong way.
		s := redistest.RealTLS(t, false)
		if err := s.Client.ConfigSet(context.Background(), "requirepass", "s3cret-pass").Err(); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ url, want string }{
			{"rediss://" + s.TLSAddr + "/0", "NOAUTH"},
			{"rediss://:wrong-pass@" + s.TLSAddr + "/0", "WRONGPASS"},
			{"redis://" + s.Addr + "/0", "NOAUTH"},
		} {
			args := []string{"--redis", tc.url, "status"}
			if strings.HasPrefix(tc.url, "rediss:") {
				args = append([]string{"--redis-ca", s.CAFile}, args...)
			}
			_, _, err := run(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ":PASSWORD@") ||
				strings.Contains(err.Error(), "use redis://") || strings.Contains(err.Error(), "wrong-pass") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: %v; want one line with %s and how to give the password, no TLS hint, no password shown", tc.url, err, tc.want)
			}
		}
	})
	t.Run("bad setups", func(t *testing.T) {
		s := redistest.RealTLS(t, false)
		url := "rediss://" + s.TLSAddr + "/0"
		key, _ := os.ReadFile(s.KeyFile)
		secret := strings.Split(strings.TrimSpace(string(key)), "\n")[1] // a line of the key's base64
		for _, tc := range []struct {
			args  []string
			want  string
			usage bool
		}{
			{[]string{"--redis", url, "status"}, "--redis-ca", false},                                 // the system's CAs do not know the test's
			{[]string{"--redis", url, "--redis-ca", s.OtherCA, "status"}, "--redis-ca", false},        // a CA that signed nothing here
			{[]string{"--redis", url, "--redis-ca", s.KeyFile, "status"}, "no PEM certificate", true}, // a key is no CA
			{[]string{"--redis", url, "--redis-ca", "/nonexistent/ca.pem", "status"}, "--redis-ca", true},
			{[]string{"--redis", url, "--redis-ca", s.CAFile, "--redis-cert", s.CertFile, "status"}, "go together", true},
			{[]string{"--redis", url, "--redis-ca", s.CAFile, "--redis-cert", s.KeyFile, "--redis-key", s.KeyFile, "status"}, "--redis-cert", true},
			{[]string{"--redis", "redis://" + s.Addr + "/0", "--redis-ca", s.CAFile, "status"}, "use rediss://", true},
		} {
			out, errOut, err := run(t, tc.args...)
			if err == nil || isUsage(err) != tc.usage || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v: %v (a usage error: %v); want one line with %q, usage error %v", tc.args, err, isUsage(err), tc.want, tc.usage)
			}
			for _, text := range []string{out, errOut, func() string {
				if err != nil {
					return err.Error()
				}
				return ""
			}()} {
				if strings.Contains(text, secret) || strings.Contains(text, "PRIVATE KEY") {
					t.Errorf("%v: the output shows the key file's contents", tc.args)
				}
			}
		}
	})
}
