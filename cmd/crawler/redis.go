package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

const defaultRedis = "redis://127.0.0.1:6379/0"

// redisURL is a parsed --redis: the client's options and the URL as it may
// be shown (never with its password).
type redisURL struct {
	opt   *redis.Options
	addrs []string // host:port of each node given: several name a Redis Cluster's seed nodes
	// master is the name Sentinel knows the master by (redis-sentinel://):
	// addrs are then the sentinels.
	master string
	shown  string
	tls    bool
}

// bareNodes: s is host:port, or several separated by commas, and nothing
// else (no user info: a password needs the URL form).
func bareNodes(s string) bool {
	for _, a := range strings.Split(s, ",") {
		if host, port, err := net.SplitHostPort(a); err != nil || host == "" || port == "" || strings.ContainsAny(a, "@/?#") {
			return false
		}
	}
	return true
}

// parseRedisURL checks --redis. Its errors quote nothing of the URL that
// could hold the password: only what follows the last '@' (the host, port
// and database), and its own words instead of the parser's, which repeat
// whatever they could not read.
func parseRedisURL(raw string) (redisURL, error) {
	const want = redisURLForms
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok && bareNodes(raw) {
		return parseRedisURL("redis://" + raw) // host:port, or a cluster's host:port,host:port: no password, no TLS
	}
	if !ok {
		return redisURL{}, fmt.Errorf("--redis is not a URL (%s)", want)
	}
	if base, ok := strings.CutSuffix(scheme, "-sentinel"); ok && (base == "redis" || base == "rediss") {
		return parseSentinelURL(scheme, base, rest)
	}
	if scheme != "redis" && scheme != "rediss" {
		if strings.ContainsAny(scheme, ":@/?#") || len(scheme) > 10 {
			return redisURL{}, fmt.Errorf("--redis is not a URL (%s)", want)
		}
		return redisURL{}, fmt.Errorf("--redis: scheme %q: %s", scheme, want)
	}
	hostPart, shown := rest, scheme+"://"
	at := strings.LastIndex(rest, "@")
	if at >= 0 {
		hostPart, shown = rest[at+1:], shown+"xxxxx@"
	}
	shown += hostPart
	// An unencoded '/', '?' or '#' ends the authority inside the password:
	// part of the password would be read as the host.
	if at >= 0 && strings.ContainsAny(rest[:at], "/?#") {
		return redisURL{}, fmt.Errorf("--redis %s: cannot tell the host from the password (write / ? # @ in a password as %%2F %%3F %%23 %%40)", shown)
	}
	// A Redis Cluster's seed nodes: redis://[auth@]host:port,host:port,...
	raw, more, err := splitClusterNodes(raw, hostPart, shown)
	if err != nil {
		return redisURL{}, err
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		if strings.Contains(err.Error(), "database number") {
			return redisURL{}, fmt.Errorf("--redis %s: the database must be a number, 0 or more", shown)
		}
		return redisURL{}, fmt.Errorf("--redis %s: not a valid Redis URL (%s; write / ? # @ %% in a password as %%2F %%3F %%23 %%40 %%25)", shown, want)
	}
	if opt.DB < 0 {
		return redisURL{}, fmt.Errorf("--redis %s: the database must be a number, 0 or more", shown)
	}
	// The host the client will dial must come from after the '@': if an
	// unencoded '/', '?' or '#' ended the authority inside the password,
	// part of the password would be taken for the host.
	host, _, err := net.SplitHostPort(opt.Addr)
	if err != nil || !strings.Contains(strings.ToLower(hostPart), strings.ToLower(host)) {
		return redisURL{}, fmt.Errorf("--redis %s: cannot tell the host from the password (write / ? # @ in a password as %%2F %%3F %%23 %%40)", shown)
	}
	if len(more) > 0 && opt.DB != 0 {
		return redisURL{}, fmt.Errorf("--redis %s: a Redis Cluster has only database 0", shown)
	}
	return redisURL{opt: opt, addrs: append([]string{opt.Addr}, more...), shown: shown, tls: scheme == "rediss"}, nil
}

// redisURLForms is what --redis may be, for its errors.
const redisURLForms = "want redis://[[user]:password@]host:port[/db] or rediss://... for TLS; a cluster's nodes as host:port,host:port; " +
	"redis-sentinel://[[user]:password@]host:port[,host:port]/MASTER[/db] for Sentinel"

// parseSentinelURL reads redis-sentinel://[auth@]sentinels/MASTER[/db]
// (rest is what follows "://"): the path names the master; the rest
// reads as a redis:// URL of scheme base.
func parseSentinelURL(scheme, base, rest string) (redisURL, error) {
	auth, hosts := "", rest
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		auth, hosts = rest[:at+1], rest[at+1:]
	}
	nodes, path, _ := strings.Cut(hosts, "/")
	master, path, _ := strings.Cut(path, "/")
	if master == "" || strings.ContainsAny(master, "?#") {
		return redisURL{}, fmt.Errorf("--redis %s://%s: name the master Sentinel watches (%s)", scheme, nodes, redisURLForms)
	}
	u, err := parseRedisURL(base + "://" + auth + nodes)
	if err != nil {
		return u, err
	}
	u.master = master
	u.shown = scheme + "://" + strings.TrimPrefix(u.shown, base+"://") + "/" + master
	if path != "" {
		u.shown += "/" + path
		if u.opt.DB, err = strconv.Atoi(path); err != nil || u.opt.DB < 0 {
			return redisURL{}, fmt.Errorf("--redis %s: the database must be a number, 0 or more", u.shown)
		}
	}
	return u, nil
}

// splitClusterNodes reads a Redis Cluster's seed nodes (host:port,
// host:port, ... in hostPart, what follows the '@' of raw): raw with the
// first node alone, for the URL parser, and the others.
func splitClusterNodes(raw, hostPart, shown string) (string, []string, error) {
	nodes, tail, _ := strings.Cut(hostPart, "/")
	if !strings.Contains(nodes, ",") {
		return raw, nil, nil
	}
	addrs := strings.Split(nodes, ",")
	for _, a := range addrs[1:] {
		if _, _, err := net.SplitHostPort(a); err != nil || strings.ContainsAny(a, "?#@") {
			return "", nil, fmt.Errorf("--redis %s: node %q is not host:port (%s)", shown, a, redisURLForms)
		}
	}
	raw = raw[:len(raw)-len(hostPart)] + addrs[0]
	if tail != "" {
		raw += "/" + tail
	}
	return raw, addrs[1:], nil
}

// client opens u: a Redis Cluster when u names several nodes, else one
// server.
func (u redisURL) client() redis.UniversalClient {
	if u.master != "" {
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: u.master, SentinelAddrs: u.addrs,
			Username: u.opt.Username, Password: u.opt.Password, DB: u.opt.DB, TLSConfig: u.opt.TLSConfig, MaxRetries: u.opt.MaxRetries})
	}
	if len(u.addrs) > 1 {
		return u.cluster()
	}
	return redis.NewClient(u.opt)
}

// hideSecret removes from msg whatever raw holds before its last '@' (the
// user info, and so any password, however the URL is mangled): the last
// guard before anything is printed.
func hideSecret(msg, raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		rest = raw
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return msg
	}
	info := rest[:at]
	secrets := []string{info}
	if _, pw, ok := strings.Cut(info, ":"); ok && pw != "" {
		secrets = append(secrets, pw)
		if dec, err := url.PathUnescape(pw); err == nil {
			secrets = append(secrets, dec)
		}
	}
	for _, s := range secrets {
		if len(s) >= 3 { // shorter is no secret worth a mangled message
			msg = strings.ReplaceAll(msg, s, "xxxxx")
		}
	}
	return msg
}

// connect opens the --redis URL and checks that it answers. With a wait
// (work's --redis-wait), a Redis that is not up yet (refused, unreachable,
// still loading its data) is asked again with back-off until the wait is
// over, and each try says so on stderr. A server that turns out to be a
// node of a Redis Cluster is reopened as the cluster, whose other nodes
// it tells the client.
func connect(c *cli.Context) (redis.UniversalClient, error) {
	u, err := parseRedisURL(c.String("redis"))
	if err != nil {
		return nil, usage(err) // a malformed --redis is wrong usage, like any bad flag
	}
	if err := u.useTLSFiles(c.String("redis-ca"), c.String("redis-cert"), c.String("redis-key")); err != nil {
		return nil, usage(err)
	}
	u.opt.MaxRetries = 3
	rdb := u.client()
	wait := c.Duration("redis-wait") // 0 for commands without the flag
	deadline := time.Now().Add(wait)
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		ctx, cancel := context.WithTimeout(c.Context, 5*time.Second)
		err = rdb.Ping(ctx).Err()
		if _, single := rdb.(*redis.Client); err == nil && single {
			var on bool
			if on, err = clusterEnabled(ctx, rdb); err == nil && on {
				if u.opt.DB != 0 {
					cancel()
					rdb.Close()
					return nil, fmt.Errorf("--redis %s: the server is a Redis Cluster node, and a cluster has only database 0", u.shown)
				} else {
					rdb.Close()
					rdb = u.cluster()
					err = rdb.Ping(ctx).Err()
				}
			}
		}
		cancel()
		if err == nil {
			nameDialErrors(rdb)
			return rdb, nil
		}
		if !crawl.RedisGoneForNow(err) || !time.Now().Add(delay).Before(deadline) || c.Context.Err() != nil {
			break
		}
		fmt.Fprintf(c.App.ErrWriter, "crawler: waiting for Redis at %s: %v (retrying for up to %v more)\n",
			u.shown, err, time.Until(deadline).Round(time.Second))
		select {
		case <-c.Context.Done():
		case <-time.After(delay):
		}
	}
	rdb.Close()
	hint := ""
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var reply redis.Error // the server answered: the connection, TLS or not, works
	var netErr *net.OpError
	switch {
	case errors.As(err, &netErr) && netErr.Op == "dial":
		// Nothing answered at that address (refused, unreachable, timed
		// out): the error says so, and no TLS setting would change it.
	case errors.As(err, &reply):
		if msg := reply.Error(); strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS") {
			hint = " (give the password in the --redis URL: redis://:PASSWORD@HOST:PORT, or USER:PASSWORD@ for an ACL user)"
		}
	case errors.As(err, &unknownCA):
		hint = " (give the CA that signed the server's certificate with --redis-ca)"
	case errors.As(err, &badHost):
		hint = " (the server's certificate is not for the host in --redis)"
	case u.tls && (strings.Contains(err.Error(), "certificate required") || wantsClientCert(u.opt.Addr, u.opt.TLSConfig)):
		hint = " (the server asks for a client certificate: --redis-cert and --redis-key)"
	case strings.Contains(err.Error(), "can't parse"):
		hint = " (what answers at that address does not speak Redis's protocol)"
	case u.tls:
		hint = " (rediss:// speaks TLS: if the server is a plain one, use redis://)"
	case errors.Is(err, io.EOF) || strings.Contains(err.Error(), "reset by peer"):
		hint = " (if the server wants TLS, use rediss://)"
	}
	if wait > 0 {
		hint += fmt.Sprintf(" after waiting %v", wait)
	}
	return nil, fmt.Errorf("cannot reach Redis at %s (--redis): %v%s", u.shown, err, hint)
}

// nameDialErrors makes every later failure to connect to a Redis server
// (a node of a cluster, or the one server) say that it is Redis, and at
// which address: a worker's warnings while a master is down then read
// "Redis at 10.0.0.3:6379 is unreachable: dial tcp …: connection refused".
func nameDialErrors(rdb redis.UniversalClient) {
	if cluster, ok := rdb.(*redis.ClusterClient); ok {
		cluster.OnNewNode(func(node *redis.Client) { node.AddHook(dialNamer{}) })
		cluster.ForEachShard(context.Background(), func(_ context.Context, node *redis.Client) error {
			node.AddHook(dialNamer{})
			return nil
		})
		return
	}
	rdb.AddHook(dialNamer{})
}

type dialNamer struct{}

func (dialNamer) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			if addr == "FailoverClient" { // go-redis's name for the master Sentinel names; err has its address
				return nil, fmt.Errorf("the Redis master Sentinel names is unreachable: %w", err)
			}
			return nil, fmt.Errorf("Redis at %s is unreachable: %w", addr, err)
		}
		return conn, nil
	}
}

func (dialNamer) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialNamer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
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

func allowEvictionFlag() cli.Flag {
	return &cli.BoolFlag{Name: "allow-eviction", Usage: "run even on a Redis that may evict keys (maxmemory set with a policy " +
		"other than noeviction); the crawl may then lose URLs, records or its lock, and workers say so when it happens"}
}

// checkEviction refuses a Redis that may evict the crawl's keys, unless
// --allow-eviction, which still says so, once a process ('crawl' seeds
// and works: one warning).
func checkEviction(c *cli.Context, rdb redis.UniversalClient) error {
	err := crawl.CheckEviction(c.Context, rdb)
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
