package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/redisconn"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

// connect opens the --redis URL with the TLS files its flags name, and
// checks that it answers (redisconn.Connect), waiting --redis-wait.
func connect(c *cli.Context) (redis.UniversalClient, error) {
	u, err := redisconn.Parse(c.String("redis"))
	if err != nil {
		return nil, usage(err) // a malformed --redis is wrong usage, like any bad flag
	}
	if err := u.UseTLSFiles(c.String("redis-ca"), c.String("redis-cert"), c.String("redis-key")); err != nil {
		return nil, usage(err)
	}
	return redisconn.Connect(c.Context, u, c.Duration("redis-wait"), c.App.ErrWriter) // no --redis-wait: 0
}

// connectOrEmbed uses --redis when it was given (flag or environment),
// and otherwise starts an in-process Redis (miniredis) that lives as long
// as this command.
func connectOrEmbed(c *cli.Context) (redis.UniversalClient, func(), error) {
	return connectOrEmbedIf(c, c.IsSet("redis"))
}

// connectOrEmbedIf uses --redis when useRedis, else an embedded Redis.
func connectOrEmbedIf(c *cli.Context, useRedis bool) (redis.UniversalClient, func(), error) {
	if useRedis {
		rdb, err := connect(c)
		if err != nil {
			return nil, nil, err
		}
		return rdb, func() { rdb.Close() }, nil
	}
	return redisconn.Embedded()
}

func allowEvictionFlag() cli.Flag {
	return &cli.BoolFlag{Name: "allow-eviction", Usage: "run even on a Redis that may evict keys (maxmemory set with a policy " +
		"other than noeviction); the crawl may then lose URLs, records or its lock, and workers say so when it happens"}
}

// checkEviction refuses a Redis that may evict the crawl's keys, unless
// --allow-eviction, which still says so, once a process ('crawl' seeds
// and works: one warning).
func checkEviction(c *cli.Context, rdb redis.UniversalClient) error {
	err := redisconn.CheckEviction(c.Context, rdb)
	if errors.Is(err, crawl.ErrEvictingRedis) && c.Bool("allow-eviction") {
		if c.App.Metadata["eviction-warned"] == nil {
			fmt.Fprintf(c.App.ErrWriter, "crawler: warning: %v (going on: --allow-eviction)\n",
				strings.TrimSuffix(err.Error(), "; or give --allow-eviction to crawl anyway"))
			c.App.Metadata["eviction-warned"] = true
		}
		return nil
	}
	return err
}
