package frontier

import (
	"embed"

	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redcrawl/crawler/politeness"
)

// The frontier's Lua: its scripts and the modules they require (lib.lua's
// queues, addrs.lua's address buckets, exchange_steps.lua), with
// politeness's token bucket (tokens.lua) and dedup's Bloom filter
// (bloom.lua).
var (
	//go:embed *.lua
	luaFiles embed.FS
	lua      = script.NewLib("frontier", luaFiles, politeness.Lua, dedup.Lua)
)
