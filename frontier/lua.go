package frontier

import (
	"embed"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier/exchange"
	"github.com/redcrawl/crawler/frontier/queue"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redcrawl/crawler/politeness/slots"
)

// The frontier's Lua: its scripts, each file naming on its first line the
// modules it requires: the queue's (package frontier/queue: base, keys,
// queue, push, pushback, pop, the host and address buckets), the steps of
// the exchange's five scripts (package frontier/exchange: exchange_call.lua,
// _guard, _links, _finish, _back, _pop, _end and _take, for exchange.lua,
// finish.lua, back.lua, handout.lua and take.lua) and of the sweep's two scripts
// (schedule.lua, schedule_end.lua, and their schedule_steps.lua), and the
// contract (frontier/exchange/contract.lua, generated from contract.go);
// with politeness's token bucket (tokens.lua) and dedup's Bloom filter
// (bloom.lua).
var (
	//go:embed *.lua
	luaFiles embed.FS
	lua      = script.NewLib("frontier", luaFiles, exchange.Lua, queue.Lua, politeness.Lua, slots.Lua, dedup.Lua)
)
