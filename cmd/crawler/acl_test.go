package main

import (
	"context"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/internal/redistest"
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
