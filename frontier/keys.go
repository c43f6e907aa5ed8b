package frontier

import "github.com/redcrawl/crawler/frontier/keyspace"

// The crawl's keys beside the frontier's own (package doc); the
// frontier's are keyspace.Keys.

// LeaderKey is the crawl's scheduler lock (keyspace.LeaderKey).
func (f *Frontier) LeaderKey() string { return keyspace.LeaderKey(f.name) }

// RateKey is host's token bucket (package politeness), in its shard's
// slot beside its queue, so that on a Redis Cluster one master holds all
// of a host.
func (f *store) RateKey(host string) string {
	return f.fs[keyspace.ShardOf(host, len(f.fs))].keys.Buckets + host
}

// RobotsKey is the robots.txt cache of scheme://host (politeness.Robots:
// a robots.txt is scoped to its scheme, host and port), in host's shard's
// slot.
func (f *Frontier) RobotsKey(scheme, host string) string {
	return keyspace.Tag(f.name, keyspace.ShardOf(host, len(f.fs))) + "robots:" + scheme + "://" + host
}

// PauseChannel is the pub/sub channel on which workers announce the hosts
// they paused (a 429 or 503), "host ms": a URL popped before the pause,
// its token reserved ahead, is then not fetched during it.
func (f *Frontier) PauseChannel() string { return keyspace.Tag(f.name, 0) + "paused" }

// The lanes a host's URLs are popped in (keyspace.LanePlain): a host of
// the render lane is popped only by workers with a browser (Options.Lane).
const (
	LanePlain  = keyspace.LanePlain
	LaneRender = keyspace.LaneRender
)
