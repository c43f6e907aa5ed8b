package frontier

import "strconv"

// Keys names a crawl's frontier keys; all share the crawl's hash tag.
type Keys struct {
	// Queues is the prefix of the hosts' queues: Queues+host is one host's
	// list of URLs (lib.lua has the format).
	Queues string
	// Lengths is a hash: host -> URLs in its queue.
	Lengths                                                  string
	Ready, Leases, Deferred, Failed, Workers, Stats, Results string
	DoneFlag                                                 string // "1" once the scheduler saw nothing left to do
	// HostPages counts pages fetched per host, with a per-host cap.
	HostPages string
	// Ended is a sorted set: lease id -> when an exchange ended it (ms),
	// kept a minute, so that the same exchange sent again (its reply was
	// lost) finds its pages recorded rather than their leases lost.
	Ended string
	// Counters is the prefix of the processes' exchange counters (Counter).
	Counters string
	// Fence, for a shard other than the first, keeps the highest epoch of
	// a scheduler that swept it (fence.Script.RunRaising); "" for the
	// first shard, whose sweeps are fenced by the leader's epoch counter.
	Fence string
	// Config is the crawl's settings hash (written by crawl.Seed), or for
	// a shard other than the first a marker of the crawl in that shard: the
	// crawl exists while it does. Scripts that write refuse when it is
	// missing (ErrGone), so a reset crawl is not brought back piecemeal.
	Config string
}

// Counter is the key in which Redis counts the exchanges of the process
// whose token is given (see Frontier.Exchange).
func (k Keys) Counter(token string) string { return k.Counters + token }

// Queue is the key of host's queue.
func (k Keys) Queue(host string) string { return k.Queues + host }

// Wake is the pub/sub channel on which a message says that the queues,
// which were empty, have URLs again (lib.lua's fr_count): idle workers
// wait on it instead of polling. (A channel is not a key: no host's queue
// can clash with it.)
func (k Keys) Wake() string { return k.Queues + "wake" }

// KeysForShard returns the keys of shard s of crawl name's frontier.
// Shard 0's are KeysFor(name)'s, so a crawl of one shard is laid out as
// crawls were before shards; shard s > 0 lives under its own hash tag
// crawl:{name/s}, which a Redis Cluster may place on any master. (A crawl
// name has no '/', so no other crawl's keys can take that form.)
func KeysForShard(name string, s int) Keys {
	if s == 0 {
		return KeysFor(name)
	}
	p := "crawl:{" + name + "/" + strconv.Itoa(s) + "}:"
	k := keysUnder(p)
	k.Config, k.Fence = p+"exists", p+"fence"
	return k
}

// KeysFor returns the keys of crawl name under crawl:{name}.
func KeysFor(name string) Keys { return keysUnder("crawl:{" + name + "}:") }

func keysUnder(p string) Keys {
	return Keys{Queues: p + "queue:", Lengths: p + "lengths", Counters: p + "counter:", Ready: p + "ready", Leases: p + "leases", Deferred: p + "deferred",
		Failed: p + "failed", Workers: p + "workers", Stats: p + "stats", Results: p + "results", DoneFlag: p + "done",
		Config: p + "config", HostPages: p + "hostpages", Ended: p + "ended"}
}

// OldQueue is the queue's key in crawls seeded before the compact queues
// (one sorted set for all hosts); MigrateOldQueue empties it.
func (k Keys) OldQueue() string { return k.Queues[:len(k.Queues)-len("queue:")] + "items" }
