package frontier

import (
	"fmt"
	"strings"
)

//go:generate go test -run TestTheLuaContractIsCurrent -update .

// What Go and the scripts agree on by place is declared here, once: the
// keys of the exchange and of the sweep in the order they are sent, and a
// finished page's numbers (doneArgs) with its flags.
// frontier/exchange/contract.lua, which those scripts require, is
// generated from these declarations (go generate;
// TestTheLuaContractIsCurrent fails while it is not), so no place is
// written by hand on two sides.

// namedKey is a script's key: the name its Lua reads it by (K.name), what
// it holds where a check is made (a Redis type; "" for a string or a
// prefix), and the shard's key.
type namedKey struct {
	name, kind string
	key        func(f *shard) string
}

// keysOf is the keys of list for shard f, in order.
func keysOf(list []namedKey, f *shard) []string {
	keys := make([]string, len(list))
	for i, k := range list {
		keys[i] = k.key(f)
	}
	return keys
}

// exchangeKeyList is exchange.lua's keys after the Bloom filter's.
var exchangeKeyList = []namedKey{
	{"queues", "", func(f *shard) string { return f.keys.Queues }},
	{"ready", "zset", func(f *shard) string { return f.keys.Ready }},
	{"leases", "zset", func(f *shard) string { return f.keys.Leases }},
	{"stats", "hash", func(f *shard) string { return f.keys.Stats }},
	{"failed", "list", func(f *shard) string { return f.keys.Failed }},
	{"results", "stream", func(f *shard) string { return f.keys.Results }},
	{"done", "", func(f *shard) string { return f.keys.DoneFlag }},
	{"counter", "", func(f *shard) string { return f.keys.Counter(f.process()) }},
	{"config", "", func(f *shard) string { return f.keys.Config }},
	{"hostpages", "hash", func(f *shard) string { return f.keys.HostPages }},
	{"lengths", "hash", func(f *shard) string { return f.keys.Lengths }},
	{"ended", "", func(f *shard) string { return f.keys.EndedBy(f.process()) }},
	{"buckets", "", func(f *shard) string { return f.keys.Buckets }},
	{"slowed", "hash", func(f *shard) string { return f.keys.Slowed }},
	{"outbox", "hash", func(f *shard) string { return f.keys.Outbox }},
	{"due", "zset", func(f *shard) string { return f.keys.Due }},
	{"refill", "zset", func(f *shard) string { return f.keys.Refill }},
	{"capped", "hash", func(f *shard) string { return f.keys.Capped }},
	{"deferred", "zset", func(f *shard) string { return f.keys.Deferred }},
	{"paused", "", func(f *shard) string { return f.keys.Paused }},
	{"hostrules", "hash", func(f *shard) string { return f.keys.HostRules }},
	{"settings", "string", func(f *shard) string { return f.keys.Settings }},
	{"grants", "", func(f *shard) string { return f.keys.GrantsOf(f.process()) }},
	{"refunds", "", func(f *shard) string { return f.keys.RefundsOf(f.process()) }},
	{"fresh", "hash", func(f *shard) string { return f.keys.FreshOf(f.process()) }},
}

// scheduleKeyList is the sweep's keys after the fence's KEYS[1], the same
// for both of its scripts (schedule.lua, schedule_end.lua).
var scheduleKeyList = []namedKey{
	{"queues", "", func(f *shard) string { return f.keys.Queues }},
	{"ready", "zset", func(f *shard) string { return f.keys.Ready }},
	{"leases", "zset", func(f *shard) string { return f.keys.Leases }},
	{"deferred", "zset", func(f *shard) string { return f.keys.Deferred }},
	{"failed", "list", func(f *shard) string { return f.keys.Failed }},
	{"stats", "hash", func(f *shard) string { return f.keys.Stats }},
	{"done", "", func(f *shard) string { return f.keys.DoneFlag }},
	{"workers", "", func(f *shard) string { return f.keys.Workers }},
	{"config", "", func(f *shard) string { return f.keys.Config }},
	{"results", "stream", func(f *shard) string { return f.keys.Results }},
	{"lengths", "hash", func(f *shard) string { return f.keys.Lengths }},
	{"outbox", "hash", func(f *shard) string { return f.keys.Outbox }},
	{"due", "zset", func(f *shard) string { return f.keys.Due }},
	{"workerinfo", "", func(f *shard) string { return f.keys.WorkerInfo }},
	{"refill", "zset", func(f *shard) string { return f.keys.Refill }},
	{"sweeps", "", func(f *shard) string { return f.keys.Sweeps }},
	{"settings", "string", func(f *shard) string { return f.keys.Settings }},
	{"samples", "", func(f *shard) string { return f.keys.Samples }},
}

// doneNames are a finished page's numbers (doneArgs), by place, as the
// exchange's Lua names them (EX_LEASE, f[EX_LEASE]; 1-based there).
var doneNames = [doneFields]string{dLease: "lease", dStat: "stat", dRecord: "record", dVisit: "visit",
	dDue: "due", dFlags: "flags", dFailed: "failed", dMs: "ms", dCounted: "counted", dGrant: "grant", dPut: "put",
	dAfter: "after", dAddr: "addr"}

// doneFlagNames are a finished page's flags (f[EX_FLAGS]) as the Lua names
// them (EX_FETCHED …).
var doneFlagNames = []struct {
	flag int64
	name string
}{{doneFetched, "fetched"}, {doneRefund, "refund"}, {doneAway, "away"}, {doneDeferred, "deferred"}, {doneRequeued, "requeued"}}

// contractLua is contract.lua's text, made from the declarations above.
func contractLua() string {
	var b strings.Builder
	b.WriteString(`-- contract.lua: generated from frontier/contract.go by 'go generate'; do
-- not edit. What Go and the scripts agree on by place, declared once in Go.
-- (Flat tables: a script's tables are made anew at each call, and each
-- costs Redis its allocation and its collection.)

`)
	keys := func(lua, what string, list []namedKey, checked bool) {
		fmt.Fprintf(&b, "-- %s_KEYS names %s,\n-- in the order Go sends them.", lua, what)
		names, kinds := make([]string, len(list)), []string{}
		for i, k := range list {
			names[i] = "'" + k.name + "'"
			if k.kind != "" {
				kinds = append(kinds, k.name+" = '"+k.kind+"'")
			}
		}
		if checked {
			fmt.Fprintf(&b, " %s_KINDS says what those with a kind hold (the\n-- others: a string, or a prefix).", lua)
		}
		fmt.Fprintf(&b, "\nlocal %s_KEYS = {%s}\n", lua, strings.Join(names, ", "))
		if checked {
			fmt.Fprintf(&b, "local %s_KINDS = {%s}\n", lua, strings.Join(kinds, ", "))
		}
		b.WriteString("\n")
	}
	keys("EX", "exchange.lua's keys after the Bloom filter's", exchangeKeyList, true)
	keys("SC", "the sweep's keys after the fence's KEYS[1] (schedule.lua, schedule_end.lua)", scheduleKeyList, false)
	b.WriteString("-- A finished page's numbers, by place (doneArgs; absent trailing ones are\n-- 0): read as f[EX_STAT] and so on.\n")
	names, places := make([]string, len(doneNames)), make([]string, len(doneNames))
	for i, n := range doneNames {
		names[i], places[i] = "EX_"+strings.ToUpper(n), fmt.Sprint(i+1)
	}
	fmt.Fprintf(&b, "local %s = %s\n\n", strings.Join(names, ", "), strings.Join(places, ", "))
	b.WriteString("-- The flags of a finished page (f[EX_FLAGS]), each a power of two: flag is\n-- set in flags when flags % (2 * flag) >= flag.\n")
	names, places = names[:0], places[:0]
	for _, f := range doneFlagNames {
		names, places = append(names, "EX_"+strings.ToUpper(f.name)), append(places, fmt.Sprint(f.flag))
	}
	fmt.Fprintf(&b, "local %s = %s\n", strings.Join(names, ", "), strings.Join(places, ", "))
	return b.String()
}
