package redisconn

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Connect opens u and checks that it answers. With a wait (work's
// --redis-wait), a Redis that is not up yet (refused, unreachable, still
// loading its data: GoneForNow) is asked again with back-off until the
// wait is over, each try said on say. A server that turns out to be a node
// of a Redis Cluster is reopened as the cluster, whose other nodes it
// tells the client. Its error names the address (never the password) and,
// where the failure says why, what to change: the password, a CA, a
// client certificate, TLS or not.
func Connect(ctx context.Context, u URL, wait time.Duration, say io.Writer) (redis.UniversalClient, error) {
	u.opt.MaxRetries = 3
	rdb := u.Client()
	deadline := time.Now().Add(wait)
	var err error
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		rdb, err = ping(ctx, u, rdb)
		if err == nil {
			nameDialErrors(rdb)
			return rdb, nil
		}
		if !GoneForNow(err) || !time.Now().Add(delay).Before(deadline) || ctx.Err() != nil {
			break
		}
		fmt.Fprintf(say, "crawler: waiting for Redis at %s: %v (retrying for up to %v more)\n",
			u.shown, err, time.Until(deadline).Round(time.Second))
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
	rdb.Close()
	if errors.Is(err, errClusterDB) {
		return nil, fmt.Errorf("--redis %s: %w", u.shown, err)
	}
	hint := hintFor(u, err)
	if wait > 0 {
		hint += fmt.Sprintf(" after waiting %v", wait)
	}
	return nil, fmt.Errorf("cannot reach Redis at %s (--redis): %v%s", u.shown, err, hint)
}

var errClusterDB = errors.New("the server is a Redis Cluster node, and a cluster has only database 0")

// ping asks rdb once, within 5 s; a single server that is a Cluster's
// node is closed and the cluster opened and asked instead.
func ping(ctx context.Context, u URL, rdb redis.UniversalClient) (redis.UniversalClient, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := rdb.Ping(ctx).Err()
	if _, single := rdb.(*redis.Client); err != nil || !single {
		return rdb, err
	}
	on, err := ClusterEnabled(ctx, rdb)
	if err != nil || !on {
		return rdb, err
	}
	if u.opt.DB != 0 {
		return rdb, errClusterDB
	}
	rdb.Close()
	rdb = u.Cluster()
	return rdb, rdb.Ping(ctx).Err()
}

// hintFor is what to change when err ended a connection to u, as the
// error shows it ("" when it says enough).
func hintFor(u URL, err error) string {
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
			return " (give the password in the --redis URL: redis://:PASSWORD@HOST:PORT, or USER:PASSWORD@ for an ACL user)"
		}
	case errors.As(err, &unknownCA):
		return " (give the CA that signed the server's certificate with --redis-ca)"
	case errors.As(err, &badHost):
		return " (the server's certificate is not for the host in --redis)"
	case u.tls && (strings.Contains(err.Error(), "certificate required") || wantsClientCert(u.opt.Addr, u.opt.TLSConfig)):
		return " (the server asks for a client certificate: --redis-cert and --redis-key)"
	case strings.Contains(err.Error(), "can't parse"):
		return " (what answers at that address does not speak Redis's protocol)"
	case u.tls:
		return " (rediss:// speaks TLS: if the server is a plain one, use redis://)"
	case errors.Is(err, io.EOF) || strings.Contains(err.Error(), "reset by peer"):
		return " (if the server wants TLS, use rediss://)"
	}
	return ""
}

// GoneForNow: an error of a Redis that is away for now (restarting,
// loading its data, a connection dropped or refused, a cluster or replica
// between masters), not of the request, a wrong address or a password:
// worth trying again.
func GoneForNow(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		redis.HasErrorPrefix(err, "LOADING") || redis.HasErrorPrefix(err, "MASTERDOWN") ||
		redis.HasErrorPrefix(err, "CLUSTERDOWN") || redis.HasErrorPrefix(err, "TRYAGAIN") ||
		redis.HasErrorPrefix(err, "READONLY") // a master demoted by a failover, until the client finds the new one
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
