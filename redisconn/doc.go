// Package redisconn opens the Redis a crawl runs on, from the URL every
// crawler command takes as --redis: one server (redis://, rediss:// for
// TLS, with --redis-ca and a client certificate), a Redis Cluster (its
// seed nodes, host:port,host:port; a single node that turns out to be a
// Cluster's is reopened as the Cluster), or the master a Sentinel names
// (redis-sentinel://). Or, with no server at all, an embedded one. And
// it reads what a Redis says of its memory (memory.go): whether it may
// evict a crawl's keys (CheckEviction), whether it is full (RedisFull).
//
// Nothing it prints or returns holds the URL's password: Parse's errors
// quote only what follows its last '@', URL.Shown replaces it, and
// HideSecret is the last guard on any message before it is printed.
//
// A Cluster client made here follows a failover within moments (a failed
// node asks for a new slot map); a client of any kind names the address
// of a Redis it could not reach in its errors.
package redisconn
