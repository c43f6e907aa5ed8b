package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
	"github.com/redis/go-redis/v9"
)

// leastPrivilege is the ACL README.md gives for the crawler's user: the
// crawl's keys and channels only, and the commands of reading, writing,
// scripts, pub/sub, transactions and connections but none Redis calls
// dangerous (FLUSHALL, KEYS, CONFIG, DEBUG…), plus INFO (the eviction
// check) and TIME (the one clock), and no SCRIPT FLUSH or KILL.
var leastPrivilege = []any{"resetkeys", "~crawl:*", "resetchannels", "&crawl:*", "-@all",
	"+@connection", "+@read", "+@write", "+@scripting", "+@pubsub", "+@transaction", "-@dangerous", "+info", "+time", "-script|flush", "-script|kill"}

// Every command works as an ACL user allowed only the crawl's keys and
// channels and the commands above (over TLS too), and that user can touch
// nothing else: another key, FLUSHALL, CONFIG are refused.
func TestLeastPrivilegeACLUser(t *testing.T) {
	s := redistest.RealTLS(t, false)
	ctx := context.Background()
	if err := s.Client.Do(ctx, append([]any{"ACL", "SETUSER", "crawler", "reset", "on", ">s3cret-pass"}, leastPrivilege...)...).Err(); err != nil {
		t.Fatal(err)
	}
	var printed string
	t.Run("plain", func(t *testing.T) {
		printed += crawlAll(t, "--redis", "redis://crawler:s3cret-pass@"+s.Addr+"/0", "--crawl", "acl")
	})
	t.Run("tls", func(t *testing.T) {
		printed += crawlAll(t, "--redis", "rediss://crawler:s3cret-pass@"+s.TLSAddr+"/0", "--redis-ca", s.CAFile, "--crawl", "acl-tls")
	})
	if strings.Contains(printed, "s3cret-pass") {
		t.Error("the password is in the commands' output")
	}
	if denied := s.Client.Do(ctx, "ACL", "LOG").Val(); denied != nil && len(denied.([]any)) > 0 {
		t.Errorf("the crawl was denied something: %v", denied)
	}
	user := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "crawler", Password: "s3cret-pass"})
	defer user.Close()
	for name, err := range map[string]error{
		"SET other":  user.Set(ctx, "other", "x", 0).Err(),
		"GET other":  user.Get(ctx, "other").Err(),
		"FLUSHALL":   user.FlushAll(ctx).Err(),
		"CONFIG SET": user.ConfigSet(ctx, "maxmemory", "1").Err(),
		"KEYS":       user.Keys(ctx, "*").Err(),
		"PUBLISH":    user.Publish(ctx, "news", "x").Err(),
	} {
		if err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%s as the crawler's user: %v; want NOPERM", name, err)
		}
	}
	if err := user.Set(ctx, "crawl:{acl}:mine", "x", 0).Err(); err != nil {
		t.Errorf("a crawl key: %v", err)
	}
}

// On a Redis Cluster the same user, with CLUSTER SLOTS besides (the client
// reads the slot map), crawls across the masters.
func TestLeastPrivilegeACLUserOnACluster(t *testing.T) {
	c := redistest.RealCluster(t, 3)
	ctx := context.Background()
	for _, n := range c.Nodes {
		args := append(append([]any{"ACL", "SETUSER", "crawler", "reset", "on", ">s3cret-pass"}, leastPrivilege...), "+cluster|slots")
		if err := n.Client.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	crawlAll(t, "--redis", "redis://crawler:s3cret-pass@"+c.Addrs()[0], "--crawl", "acl-cluster")
	for _, n := range c.Nodes {
		if denied := n.Client.Do(ctx, "ACL", "LOG").Val(); denied != nil && len(denied.([]any)) > 0 {
			t.Errorf("%s denied the crawl something: %v", n.Addr, denied)
		}
	}
}

// A user the exchange's commands are not all allowed to (here no XADD, the
// results stream's) is told so at the worker's first exchange, before it
// writes anything: one line naming the command and the key, a non-zero
// exit, and the crawl as seeded (before, the script failed half-way, the
// worker took that for a lost reply and the host's queue was lost).
func TestAUserWithoutACommandTheExchangeNeedsIsToldBeforeAnyWrite(t *testing.T) {
	s := redistest.Real(t)
	ctx := context.Background()
	if err := s.Client.Do(ctx, append(append([]any{"ACL", "SETUSER", "noxadd", "reset", "on", ">pw"}, leastPrivilege...), "-xadd")...).Err(); err != nil {
		t.Fatal(err)
	}
	site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	admin := "redis://" + s.Addr + "/0"
	if _, errOut, err := run(t, append([]string{"--redis", admin, "--crawl", "acl", "seed", "--allow-private", "--rate", "inf"}, site.Roots()...)...); err != nil {
		t.Fatalf("seed: %v\n%s", err, errOut)
	}
	before := s.Client.HGetAll(ctx, "crawl:{acl}:stats").Val()
	_, errOut, err := run(t, "--redis", "redis://noxadd:pw@"+s.Addr+"/0", "--crawl", "acl", "work", "--exit-when-done", "-c", "2")
	// The exchange or the sweep, whichever runs first, refuses.
	if err == nil || !strings.Contains(err.Error(), "NOPERM this user may not run XADD on crawl:{acl}:") {
		t.Fatalf("work as a user without XADD: %v\n%s; want a NOPERM line naming XADD and the key", err, errOut)
	}
	if strings.Count(strings.TrimSpace(err.Error()), "\n") > 0 {
		t.Errorf("the error is more than one line: %q", err)
	}
	after := s.Client.HGetAll(ctx, "crawl:{acl}:stats").Val()
	if fmt.Sprint(after) != fmt.Sprint(before) || len(s.Client.Keys(ctx, "crawl:{acl}:counter:*").Val()) != 0 {
		t.Fatalf("the refused exchange wrote: stats %v, then %v", before, after)
	}
	for _, h := range site.Hosts() {
		if n := s.Client.LLen(ctx, "crawl:{acl}:queue:"+h).Val(); n == 0 {
			t.Errorf("the queue of %s is gone", h)
		}
	}
}
