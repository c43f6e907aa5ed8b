package redisconn

import (
	"slices"
	"strings"
	"testing"
)

// Each form --redis takes reads as the client it names: the nodes, the
// Sentinel master, the database, TLS, and the URL as it may be shown,
// with no password in it.
func TestParseReadsEachForm(t *testing.T) {
	for _, tc := range []struct {
		raw, shown, master string
		addrs              []string
		db                 int
		tls                bool
	}{
		{raw: "redis://127.0.0.1:6379/0", shown: "redis://127.0.0.1:6379/0", addrs: []string{"127.0.0.1:6379"}},
		{raw: "redis://:s3cret@h:1/2", shown: "redis://xxxxx@h:1/2", addrs: []string{"h:1"}, db: 2},
		{raw: "rediss://u:s3cret@h:1", shown: "rediss://xxxxx@h:1", addrs: []string{"h:1"}, tls: true},
		{raw: "redis://:p%40ss@h:1/0", shown: "redis://xxxxx@h:1/0", addrs: []string{"h:1"}},     // an encoded '@' in the password
		{raw: "h:1", shown: "redis://h:1", addrs: []string{"h:1"}},                               // host:port alone
		{raw: "a:1,b:2,c:3", shown: "redis://a:1,b:2,c:3", addrs: []string{"a:1", "b:2", "c:3"}}, // a Cluster's seed nodes
		{raw: "redis://:s3cret@a:1,b:2/0", shown: "redis://xxxxx@a:1,b:2/0", addrs: []string{"a:1", "b:2"}},
		{raw: "redis-sentinel://:s3cret@s1:26379,s2:26379/mymaster/3", shown: "redis-sentinel://xxxxx@s1:26379,s2:26379/mymaster/3",
			master: "mymaster", addrs: []string{"s1:26379", "s2:26379"}, db: 3},
		{raw: "rediss-sentinel://s1:26379/m", shown: "rediss-sentinel://s1:26379/m", master: "m", addrs: []string{"s1:26379"}, tls: true},
	} {
		u, err := Parse(tc.raw)
		if err != nil {
			t.Errorf("%s: %v", tc.raw, err)
			continue
		}
		if u.Shown() != tc.shown || u.master != tc.master || !slices.Equal(u.addrs, tc.addrs) || u.DB() != tc.db || u.tls != tc.tls {
			t.Errorf("%s: shown %q master %q addrs %v db %d tls %v; want %q %q %v %d %v",
				tc.raw, u.Shown(), u.master, u.addrs, u.DB(), u.tls, tc.shown, tc.master, tc.addrs, tc.db, tc.tls)
		}
		if strings.Contains(u.Shown(), "s3cret") {
			t.Errorf("%s: shown as %q", tc.raw, u.Shown())
		}
	}
}

// The last guard hides the user info, and the password decoded, even in
// a message it never saw built.
func TestHideSecret(t *testing.T) {
	for _, tc := range []struct{ msg, raw string }{
		{"dial redis://u:pa55word@h failed", "redis://u:pa55word@h/0"},
		{"auth pa55/word refused", "redis://:pa55%2Fword@h/0"},
		{"no URL: :pa55word@h", ":pa55word@h"},
	} {
		if got := HideSecret(tc.msg, tc.raw); strings.Contains(got, "pa55") {
			t.Errorf("HideSecret(%q, %q) = %q", tc.msg, tc.raw, got)
		}
	}
}
