package queue

import (
	"embed"

	"github.com/redcrawl/crawler/internal/script"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redcrawl/crawler/politeness/slots"
)

// Lua is the queue's modules, which frontier's scripts require by name
// (frontier/lua.go uses this library): each file names what it requires
// on its first line.
var (
	//go:embed *.lua
	luaFiles embed.FS
	Lua      = script.NewLib("frontier/queue", luaFiles, politeness.Lua, slots.Lua)
)
