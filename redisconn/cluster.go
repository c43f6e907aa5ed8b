package redisconn

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster opens u's nodes as a Redis Cluster.
func (u URL) Cluster() *redis.ClusterClient {
	return NewClusterClient(&redis.ClusterOptions{Addrs: u.addrs, Username: u.opt.Username, Password: u.opt.Password,
		TLSConfig: u.opt.TLSConfig, MaxRetries: u.opt.MaxRetries, ClusterStateReloadInterval: clusterReloadEvery})
}

// clusterReloadEvery bounds how stale a cluster client's slot map gets
// without errors (go-redis's default is a minute).
const clusterReloadEvery = 10 * time.Second

// NewClusterClient opens a Redis Cluster client that follows a failover
// within moments. go-redis reloads its slot map on MOVED and every
// ClusterStateReloadInterval, but not when a master stops answering: it
// retries the dead master until the interval ends (a worker dialled it for
// ~50 s after its replica had taken over). A failed connection, a
// timeout or CLUSTERDOWN now asks for a reload too (go-redis runs at most
// one at a time, 200 ms apart), so once the replica is promoted the next
// reload finds it.
func NewClusterClient(opt *redis.ClusterOptions) *redis.ClusterClient {
	c := redis.NewClusterClient(opt)
	c.AddHook(reloadOnNodeError{c})
	return c
}

type reloadOnNodeError struct{ c *redis.ClusterClient }

func (h reloadOnNodeError) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnNodeError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnNodeError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(ctx, err)
		return err
	}
}

// check asks for a slot map reload after an error that says a node is gone
// or the cluster is changing: anything but a reply of Redis's own (a
// script's error, OOM, WRONGTYPE…), except CLUSTERDOWN and friends, and
// but the caller cancelling. A deadline that passed counts: a dead master
// is often met as a call that times out while go-redis redials it.
func (h reloadOnNodeError) check(ctx context.Context, err error) {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		msg := reply.Error()
		if !strings.HasPrefix(msg, "CLUSTERDOWN") && !strings.HasPrefix(msg, "TRYAGAIN") && !strings.HasPrefix(msg, "MASTERDOWN") {
			return
		}
	}
	h.c.ReloadState(context.WithoutCancel(ctx))
}

// ClusterEnabled asks one server whether it is a node of a Redis Cluster.
// A server that refuses the question (an embedded or compatible server
// without the section) is not one.
func ClusterEnabled(ctx context.Context, c redis.UniversalClient) (bool, error) {
	info, err := c.Info(ctx, "cluster").Result()
	var refused redis.Error
	if errors.As(err, &refused) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return strings.Contains(info, "cluster_enabled:1"), nil
}
