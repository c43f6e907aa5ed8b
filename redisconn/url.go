package redisconn

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Default is the Redis a crawler command uses when --redis is not given
// (the commands that embed a Redis then embed one instead).
const Default = "redis://127.0.0.1:6379/0"

// URL is a parsed --redis: the client's options and the URL as it may be
// shown (never with its password).
type URL struct {
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

// Parse reads a --redis URL (Forms). Its errors quote nothing of the URL that
// could hold the password: only what follows the last '@' (the host, port
// and database), and its own words instead of the parser's, which repeat
// whatever they could not read.
func Parse(raw string) (URL, error) {
	const want = Forms
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok && bareNodes(raw) {
		return Parse("redis://" + raw) // host:port, or a cluster's host:port,host:port: no password, no TLS
	}
	if !ok {
		return URL{}, fmt.Errorf("--redis is not a URL (%s)", want)
	}
	if base, ok := strings.CutSuffix(scheme, "-sentinel"); ok && (base == "redis" || base == "rediss") {
		return parseSentinelURL(scheme, base, rest)
	}
	if scheme != "redis" && scheme != "rediss" {
		if strings.ContainsAny(scheme, ":@/?#") || len(scheme) > 10 {
			return URL{}, fmt.Errorf("--redis is not a URL (%s)", want)
		}
		return URL{}, fmt.Errorf("--redis: scheme %q: %s", scheme, want)
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
		return URL{}, fmt.Errorf("--redis %s: cannot tell the host from the password (write / ? # @ in a password as %%2F %%3F %%23 %%40)", shown)
	}
	// A Redis Cluster's seed nodes: redis://[auth@]host:port,host:port,...
	raw, more, err := splitClusterNodes(raw, hostPart, shown)
	if err != nil {
		return URL{}, err
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		if strings.Contains(err.Error(), "database number") {
			return URL{}, fmt.Errorf("--redis %s: the database must be a number, 0 or more", shown)
		}
		return URL{}, fmt.Errorf("--redis %s: not a valid Redis URL (%s; write / ? # @ %% in a password as %%2F %%3F %%23 %%40 %%25)", shown, want)
	}
	if opt.DB < 0 {
		return URL{}, fmt.Errorf("--redis %s: the database must be a number, 0 or more", shown)
	}
	// The host the client will dial must come from after the '@': if an
	// unencoded '/', '?' or '#' ended the authority inside the password,
	// part of the password would be taken for the host.
	host, _, err := net.SplitHostPort(opt.Addr)
	if err != nil || !strings.Contains(strings.ToLower(hostPart), strings.ToLower(host)) {
		return URL{}, fmt.Errorf("--redis %s: cannot tell the host from the password (write / ? # @ in a password as %%2F %%3F %%23 %%40)", shown)
	}
	if len(more) > 0 && opt.DB != 0 {
		return URL{}, fmt.Errorf("--redis %s: a Redis Cluster has only database 0", shown)
	}
	return URL{opt: opt, addrs: append([]string{opt.Addr}, more...), shown: shown, tls: scheme == "rediss"}, nil
}

// Forms is what --redis may be, for its errors and help.
const Forms = "want redis://[[user]:password@]host:port[/db] or rediss://... for TLS; a cluster's nodes as host:port,host:port; " +
	"redis-sentinel://[[user]:password@]host:port[,host:port]/MASTER[/db] for Sentinel"

// parseSentinelURL reads redis-sentinel://[auth@]sentinels/MASTER[/db]
// (rest is what follows "://"): the path names the master; the rest
// reads as a redis:// URL of scheme base.
func parseSentinelURL(scheme, base, rest string) (URL, error) {
	auth, hosts := "", rest
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		auth, hosts = rest[:at+1], rest[at+1:]
	}
	nodes, path, _ := strings.Cut(hosts, "/")
	master, path, _ := strings.Cut(path, "/")
	if master == "" || strings.ContainsAny(master, "?#") {
		return URL{}, fmt.Errorf("--redis %s://%s: name the master Sentinel watches (%s)", scheme, nodes, Forms)
	}
	u, err := Parse(base + "://" + auth + nodes)
	if err != nil {
		return u, err
	}
	u.master = master
	u.shown = scheme + "://" + strings.TrimPrefix(u.shown, base+"://") + "/" + master
	if path != "" {
		u.shown += "/" + path
		if u.opt.DB, err = strconv.Atoi(path); err != nil || u.opt.DB < 0 {
			return URL{}, fmt.Errorf("--redis %s: the database must be a number, 0 or more", u.shown)
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
			return "", nil, fmt.Errorf("--redis %s: node %q is not host:port (%s)", shown, a, Forms)
		}
	}
	raw = raw[:len(raw)-len(hostPart)] + addrs[0]
	if tail != "" {
		raw += "/" + tail
	}
	return raw, addrs[1:], nil
}

// Client opens u: a Redis Cluster when u names several nodes, else one
// server.
func (u URL) Client() redis.UniversalClient {
	if u.master != "" {
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: u.master, SentinelAddrs: u.addrs,
			Username: u.opt.Username, Password: u.opt.Password, DB: u.opt.DB, TLSConfig: u.opt.TLSConfig, MaxRetries: u.opt.MaxRetries})
	}
	if len(u.addrs) > 1 {
		return u.Cluster()
	}
	return redis.NewClient(u.opt)
}

// HideSecret removes from msg whatever raw holds before its last '@' (the
// user info, and so any password, however the URL is mangled): the last
// guard before anything is printed.
func HideSecret(msg, raw string) string {
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

// Shown is the URL as it may be printed: its password replaced.
func (u URL) Shown() string { return u.shown }

// DB is the database the URL names (0 for a Cluster).
func (u URL) DB() int { return u.opt.DB }
