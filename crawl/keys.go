package crawl

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/redcrawl/crawler/frontier"
)

// MaxNameLen bounds a crawl name.
const MaxNameLen = 64

// ErrName: a crawl name outside the safe alphabet.
var ErrName = errors.New("crawl: invalid crawl name")

// CheckName accepts 1 to MaxNameLen letters, digits, '-', '_' and '.',
// starting with a letter or digit. The alphabet is what makes the key
// patterns of crawls injective: with no ':', '{', '}' or glob characters
// in a name, "crawl:{NAME}:*" and "crawl:NAME:*" match the keys of crawl
// NAME and of no other crawl, so reset of one never touches another.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameLen {
		return fmt.Errorf("%w %q: want 1 to %d characters", ErrName, name, MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		alnum := 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9'
		if !alnum && (i == 0 || ch != '-' && ch != '_' && ch != '.') {
			return fmt.Errorf("%w %q: want letters, digits, '-', '_' and '.', starting with a letter or digit", ErrName, name)
		}
	}
	return nil
}

// Keys are every Redis key of one crawl. Keys of the crawl as a whole
// share the hash tag {name}, so multi-key scripts are legal on a Redis
// Cluster; per-host keys (rate, robots) carry their host's shard's tag
// ({name} or {name/s}), beside the host's queue (RateKey).
type Keys struct {
	Name     string
	Config   string // hash: the crawl's settings, written once by seed
	Hosts    string // set: the seeds' hosts (scope)
	Seen     string // Bloom filter (dedup), with its segments under Seen+":"
	Leader   string // scheduler lock; its epoch counter is Leader+":epoch"
	Results  string // stream of result records, capped
	DoneFlag string // "1" once the scheduler saw nothing left to do
	Frontier frontier.Keys
}

// KeysFor names the keys of crawl name; the functions that take a name
// (or Keys) check it with CheckName first.
func KeysFor(name string) Keys {
	p := "crawl:{" + name + "}:"
	return Keys{Name: name, Config: p + "config", Hosts: p + "hosts", Seen: p + "seen", Leader: p + "leader",
		Results: p + "results", DoneFlag: p + "done", Frontier: frontier.KeysFor(name)}
}

// RateKey and RobotsKey are host's token bucket and robots.txt cache in a
// crawl of shards shards: in the host's shard's slot, beside its queue and
// its Bloom filter (frontier.ShardOf), so that on a Redis Cluster one
// master holds all of a host.
func (k Keys) RateKey(host string, shards int) string   { return k.hostKey("rate", host, shards) }
func (k Keys) RobotsKey(host string, shards int) string { return k.hostKey("robots", host, shards) }

func (k Keys) hostKey(kind, host string, shards int) string {
	tag := k.Name
	if s := frontier.ShardOf(host, shards); s > 0 {
		tag += "/" + strconv.Itoa(s)
	}
	return "crawl:{" + tag + "}:" + kind + ":" + host
}

// RatePatterns match the token buckets of every shard (SCAN MATCH).
func (k Keys) RatePatterns() []string {
	return []string{"crawl:{" + k.Name + "}:rate:*", "crawl:{" + k.Name + "/*}:rate:*"}
}

// Shard are the frontier keys of shard i (frontier.KeysForShard): shard
// 0's are k.Frontier.
func (k Keys) Shard(i int) frontier.Keys { return frontier.KeysForShard(k.Name, i) }

// SeenOf is the Bloom filter of shard i: a host's URLs are deduplicated in
// its shard, beside its queue. Shard 0's is k.Seen.
func (k Keys) SeenOf(i int) string {
	if i == 0 {
		return k.Seen
	}
	return "crawl:{" + k.Name + "/" + strconv.Itoa(i) + "}:seen"
}

// Patterns match every key of the crawl and no other crawl's, for reset
// (SCAN MATCH); see CheckName: with no '/' in a name, "{NAME/" starts only
// this crawl's shards.
func (k Keys) Patterns() []string {
	return []string{"crawl:{" + k.Name + "}:*", "crawl:{" + k.Name + "/*", "crawl:" + k.Name + ":*"}
}
