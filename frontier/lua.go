package frontier

import (
	"embed"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redcrawl/crawler/politeness"
)

// The frontier's Lua: its scripts and the modules they require, each file
// naming them on its first line: base.lua (numbers, the clock, entries,
// the guards), keys.lua (a shard's queue keys and lanes), queue.lua (the
// hosts' queues and the ready set; push.lua, pushback.lua and pop.lua, in
// and out), hostrate.lua and hostbucket.lua (a host's token bucket: its
// rate, its tokens taken), addrkeys.lua and addrs.lua (the address
// buckets), exchange_call.lua, _guard, _finish, _back, _pop and _end (the
// steps of the exchange's two scripts, exchange.lua and handout.lua),
// schedule_steps.lua and schedule_end.lua (the sweep's); with politeness's token bucket
// (tokens.lua) and dedup's Bloom filter (bloom.lua).
var (
	//go:embed *.lua
	luaFiles embed.FS
	lua      = script.NewLib("frontier", luaFiles, politeness.Lua, dedup.Lua)
)
