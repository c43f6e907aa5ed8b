// Package exchange holds the steps of the frontier's exchange, as Lua
// modules its scripts require by name (frontier/lua.go uses this library):
// exchange_call.lua makes the call the steps read; exchange_guard.lua
// refuses a call before any write; exchange_finish.lua ends the leases of
// finished pages; exchange_back.lua gives leases and tokens back and asks
// late URLs' hosts again; exchange_pop.lua grants the due hosts URLs and
// tokens; exchange_end.lua is the grant's reply; exchange_take.lua takes
// the URLs granted off their queues. The scripts that run them
// (exchange.lua, back.lua, handout.lua, take.lua) are the frontier's, in
// frontier/, each body the list of its steps. contract.lua, which the
// steps and the sweep's scripts require, is generated from
// frontier/contract.go (go generate ./frontier). Each file names what it
// requires on its first line.
package exchange

import (
	"embed"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/frontier/queue"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redcrawl/crawler/politeness"
)

// Lua is the exchange's step modules and the frontier's contract.
var (
	//go:embed *.lua
	luaFiles embed.FS
	Lua      = script.NewLib("frontier/exchange", luaFiles, queue.Lua, politeness.Lua, dedup.Lua)
)
