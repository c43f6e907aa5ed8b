package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

const defaultRedis = "redis://127.0.0.1:6379/0"

// redacted is the URL with its password hidden, for messages.
func redacted(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return scrub(errors.New(raw), raw)
	}
	return u.Redacted()
}

// connect opens the --redis URL and checks that it answers.
func connect(c *cli.Context) (*redis.Client, error) {
	raw := c.String("redis")
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("--redis %s: %v (want redis://[:password@]host:port/db or rediss://...)", redacted(raw), scrub(err, raw))
	}
	opt.MaxRetries = 3
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(c.Context, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("cannot reach Redis at %s (--redis): %v", redacted(raw), err)
	}
	return rdb, nil
}

// scrub hides the user info (and so any password) of raw wherever the
// error message repeats the URL, even when the URL does not parse.
func scrub(err error, raw string) string {
	msg := err.Error()
	scheme := strings.Index(raw, "://")
	if scheme < 0 {
		return msg
	}
	rest := raw[scheme+3:]
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return msg
	}
	return strings.ReplaceAll(msg, rest[:at], "xxxxx")
}

// connectOrEmbed uses --redis when it was given (flag or environment),
// and otherwise starts an in-process Redis (miniredis) that lives as long
// as this command.
func connectOrEmbed(c *cli.Context) (*redis.Client, func(), error) {
	if c.IsSet("redis") {
		rdb, err := connect(c)
		if err != nil {
			return nil, nil, err
		}
		return rdb, func() { rdb.Close() }, nil
	}
	mr := miniredis.NewMiniRedis()
	if err := mr.StartAddr("127.0.0.1:0"); err != nil {
		return nil, nil, fmt.Errorf("embedded Redis: %v", err)
	}
	// miniredis expires keys only when told time has passed: tell it, so
	// lock, lease and cache TTLs run as on a real server.
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				mr.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	return rdb, func() { close(stop); rdb.Close(); mr.Close() }, nil
}
