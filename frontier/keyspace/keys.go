package keyspace

import (
	"fmt"
	"strconv"
)

// Keys names a crawl's frontier keys; all share the crawl's hash tag.
type Keys struct {
	// Queues is the prefix of the hosts' queues: Queues+host is one host's
	// list of URLs (queue.lua has the format).
	Queues string
	// Lengths is a hash: host -> URLs in its queue.
	Lengths string
	// Ready is a sorted set: the hosts with URLs queued -> their token
	// bucket's tat (queue.lua, politeness/tokens.lua).
	Ready                                             string
	Leases, Deferred, Failed, Workers, Stats, Results string
	DoneFlag                                          string // "1" once the scheduler saw nothing left to do
	// HostPages counts pages fetched per host, with a per-host cap.
	HostPages string
	// Capped is a hash: the hosts whose pages reached the cap -> their
	// count, marked by the exchange whose page crossed it, so that pops
	// read the cap's state only once some host reached it.
	Capped string
	// Ended is the prefix of the processes' ended leases (EndedBy): the
	// lease ids that a process's last exchange to end any ended, so that
	// the same exchange sent again (its reply was lost) finds its pages
	// recorded rather than their leases lost.
	Ended string
	// Grants is the prefix of the processes' grants (GrantsOf): the hosts,
	// and how many URLs each, that an exchange's handout granted tokens
	// for, left for the take in the same pipeline (take.lua).
	Grants string
	// Refunds is the prefix of the processes' refunds (RefundsOf): the
	// tokens of the pages an exchange ended that made no request, per
	// host and address, which the exchange's back.lua gives back (JSON,
	// under the exchange's count; kept as long as a lease).
	Refunds string
	// Fresh is the prefix of the processes' fresh counts (FreshOf): per
	// lease an exchange's finish.lua is to end, how many of its page's
	// links exchange.lua found new, which its record counts (a hash, lease
	// id -> count; kept a day after the last).
	Fresh string
	// Buckets is the prefix of the hosts' bucket hashes: Buckets+host is
	// one host's pause, Crawl-delay and adaptive interval
	// (politeness/tokens.lua has the fields), beside its queue; its tokens
	// are its score in Ready, which the pop moves as it hands out its URL.
	Buckets string
	// Slowed is a hash: the hosts whose bucket hashes may hold a pause, a
	// delay or an adaptive interval, the only ones a pop reads (the rest of
	// a host's bucket is its score in Ready); pops drop a host whose bucket
	// no longer holds any.
	Slowed string
	// Refill is a sorted set: hosts whose queue ran dry while their bucket
	// was still filling -> the bucket's tat (queue.lua), until a URL queued
	// for them brings them back to Ready with it.
	Refill string
	// Outbox is a hash: an exchange's id -> the records of its pages whose
	// links to other shards' hosts were offered there in the same
	// pipeline, with those links, until the offers are acked (exchange.lua).
	Outbox string
	// Due is a sorted set: "host\nelement\nvisit" (a fetched URL and what
	// its last fetch left for the next: validators, digest, interval) ->
	// when it is due for a revisit (ms), written by the exchange that ends
	// the URL's lease; the scheduler's sweep moves those due back to their
	// hosts' queues, in a continuous crawl or after a recrawl (frontier/recrawl).
	Due string
	// Pauses is a sorted set: the hosts paused (a 429 or 503, a run of
	// failures: Frontier.Hosts.Pause) -> when each pause ends (ms), so that
	// status and the dashboard list them without a scan; ended pauses are
	// dropped by the next pause noted.
	Pauses string
	// WorkerInfo is a hash, in the first shard: worker -> what its last
	// heartbeat said of it ("pages leases": pages it finished, leases it
	// held), dropped with the worker from the registry.
	WorkerInfo string
	// Paused exists while the crawl is paused (hold.lua, Frontier.Control.Pause):
	// "ms\nwho", in every shard, read by that shard's pops.
	Paused string
	// Hosts.Rules is a hash: host -> its own rate and burst ("rate burst",
	// rate 0 for no limit), set by hand (Frontier.Hosts.SetRule), which the
	// pops keep to instead of the crawl's; read only while it exists.
	HostRules string
	// Settings is the crawl's settings version in force in this shard (a
	// number; absent: 0, as seeded), raised by 'crawler set'
	// (settings.lua): an exchange carrying an older version pops nothing
	// there, and every exchange's reply says it (Frontier.Control.SetSettings).
	Settings string
	// Counters is the prefix of the processes' exchange counters (Counter).
	Counters string
	// Fence, for a shard other than the first, keeps the highest epoch of
	// a scheduler that swept it (fence.Script.RunRaising); "" for the
	// first shard, whose sweeps are fenced by the leader's epoch counter.
	Fence string
	// Config is the crawl's settings hash (written by admin.Seed), or for
	// a shard other than the first a marker of the crawl in that shard: the
	// crawl exists while it does. Scripts that write refuse when it is
	// missing (ErrGone), so a reset crawl is not brought back piecemeal.
	// Sweeps is the fence's log: a capped stream (10 000 entries) to which
	// every sweep the fence let through adds its epoch, in the order Redis
	// applied them, so that a history can be checked: no sweep of an
	// older epoch after one of a newer.
	Sweeps string
	// Samples is a sorted set, in the first shard: pages a render worker
	// is to render and compare with their plain fetch (seed --render auto:
	// samples.go) -> when they may be claimed (ms; a claim moves it a
	// lease ahead). Learn is a hash, in the first shard: host -> what the
	// samples taught of it (samples.lua).
	Samples, Learn string
	// Subs is the prefix of the subresource cache's slots, in the first
	// shard (subcache.go).
	Subs   string
	Config string
}

// Counter is the key in which Redis counts the exchanges of the process
// whose token is given (see Frontier.Exchange).
func (k Keys) Counter(token string) string { return k.Counters + token }

// EndedBy is the key of the leases the last exchange of the process
// whose token is given ended (a string of lease ids; exchange.lua).
func (k Keys) EndedBy(token string) string { return k.Ended + token }

// GrantsOf is the key of the grant the process whose token is given
// leaves for its take (handout.lua, take.lua).
func (k Keys) GrantsOf(token string) string { return k.Grants + token }

// RefundsOf is the key of the refunds the process whose token is given
// left for its back.lua.
func (k Keys) RefundsOf(token string) string { return k.Refunds + token }

// FreshOf is the key of the new links' counts that exchange.lua leaves
// for the finish.lua of the process whose token is given.
func (k Keys) FreshOf(token string) string { return k.Fresh + token }

// Queue is the key of host's queue.
func (k Keys) Queue(host string) string { return k.Queues + host }

// Lanes is the hash of the hosts' lanes (queue.lua): host -> LaneRender or
// LanePlain, and field "*" the lane of a host not in it.
func (k Keys) Lanes() string { return k.Queues + " lanes" }

// AtCap is the hash of the hosts parked at their cap of requests in
// flight (frontier/queue/hostslots.lua): host -> "tat parked".
func (k Keys) AtCap() string { return k.Queues + " full" }

// Slots is the semaphore of host's requests in flight
// (frontier/queue/hostslots.lua): lease member -> 0, reservation -> lapse.
func (k Keys) Slots(host string) string { return k.Queues + " slots " + host }

// ReadyIn is the ready set of lane: Ready for the plain lane.
func (k Keys) ReadyIn(lane string) string {
	if lane == LaneRender {
		return k.Ready + " " + LaneRender
	}
	return k.Ready
}

// Wake is the pub/sub channel on which a message says that the queues,
// which were empty, have URLs again (queue.lua's fr_count): idle workers
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
		Config: p + "config", HostPages: p + "hostpages", Capped: p + "capped", Ended: p + "ended:", Grants: p + "grants:", Refunds: p + "refunds:", Fresh: p + "fresh:", Buckets: p + "rate:", Slowed: p + "slowed", Outbox: p + "outbox",
		Due: p + "due", Refill: p + "refill", Paused: p + "paused", HostRules: p + "hostrules", Settings: p + "settings", Pauses: p + "pauses", WorkerInfo: p + "workerinfo", Sweeps: p + "sweeps",
		Samples: p + "samples", Learn: p + "learn", Subs: p + "sub:"}
}

// MaxNameLen bounds a crawl name.
const MaxNameLen = 64

// CheckName accepts 1 to MaxNameLen letters, digits, '-', '_' and '.',
// starting with a letter or digit. The alphabet is what makes the key
// patterns of crawls injective: with no ':', '{', '}', '/' or glob
// characters in a name, the patterns (patterns) match the keys of crawl
// NAME and of no other crawl, so deleting one never touches another.
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

// The crawl's keys beside the frontier's queue, under the same tags.

// Tag is the prefix of shard i's keys of crawl name: crawl:{name}: for
// the first, crawl:{name/i}: for the others (a hash tag of its own, which
// a Redis Cluster may place on any master).
func Tag(name string, i int) string {
	if i == 0 {
		return "crawl:{" + name + "}:"
	}
	return "crawl:{" + name + "/" + strconv.Itoa(i) + "}:"
}

// SeenKey is shard i's Bloom filter, with its segments under it + ":".
func SeenKey(name string, i int) string { return Tag(name, i) + "seen" }

// LeaderKey is crawl name's scheduler lock (package leader); its epoch
// counter is leader.EpochKey of it. In the first shard's slot.
func LeaderKey(name string) string { return Tag(name, 0) + "leader" }

// LoginKey is crawl name's login (package session: its URL, its form, a
// secret, and its logged-out pattern), SessionKey its session (generation,
// state, cookies), and SessionLockKey the lock one worker logs in under
// (its fencing counter beside it: leader.EpochKey).
func LoginKey(name string) string       { return Tag(name, 0) + "login" }
func SessionKey(name string) string     { return Tag(name, 0) + "session" }
func SessionLockKey(name string) string { return Tag(name, 0) + "session:lock" }

// Patterns match every key of crawl name and no other crawl's (CheckName:
// with no '/' in a name, "{NAME/" starts only this crawl's shards).
func Patterns(name string) []string {
	return []string{"crawl:{" + name + "}:*", "crawl:{" + name + "/*"}
}
