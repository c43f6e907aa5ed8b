// Package perhost is the controls and views of a crawl's single hosts,
// which a person uses (crawler host, status, the dashboard) and a worker
// too (a 429's pause, a host's server addresses): a host's own rate or a
// block (hostrule.go, hostrule.lua), its pauses (pauses.go, through
// politeness's bucket), its server addresses (addrs.go, addrstore.lua)
// and its queue as it stands (queues.go). Its keys are the crawl's
// (package keyspace), in the host's shard beside its queue.
package perhost

import (
	"embed"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/queue"
	"github.com/redcrawl/crawler/internal/script"
)

// Controls are the controls and views of a crawl's single hosts
// (frontier.Frontier.Hosts).
type Controls struct {
	keyspace.Set
	// ResultsCap bounds each shard's results stream, to which a block
	// writes the records of the URLs it drops (frontier.Options.ResultsKept
	// shared among the shards).
	ResultsCap int64
}

// bucketKey is host's token bucket hash (keyspace.Keys.Buckets), in its
// shard beside its queue.
func (f Controls) bucketKey(host string) string {
	_, k := f.For(host)
	return k.Buckets + host
}

var (
	//go:embed *.lua
	luaFiles embed.FS
	lua      = script.NewLib("frontier/perhost", luaFiles, queue.Lua)
)
