// Package queue is the frontier's data structure in Redis, as Lua modules
// that every script of the frontier requires by name (frontier/lua.go):
// a crawl's keys within a shard and its lanes (keys.lua), each host's
// queue of URLs, a list a priority level, and the ready set of hosts
// scored by their token bucket's tat (queue.lua; push.lua and pushback.lua
// put URLs in, pop.lua takes them out), a host's token bucket (its rate
// and rules, hostrate.lua; the tokens a pop takes, hostbucket.lua, by
// politeness's tokens.lua), and the server addresses' buckets with
// politeness per address (addrkeys.lua, addrs.lua), and the cap of a
// host's (and an address's) requests in flight, whose slots are the URLs'
// leases (hostslots.lua, by politeness/slots's slots.lua); base.lua has what all
// of them share (numbers, the clock, entries, the guards). Nothing here is
// a script Redis runs alone: frontier's scripts (enqueue, the exchange and
// its handout, the sweep, a host's rules) are made of these. The key names
// are keyspace.Keys.
package queue
