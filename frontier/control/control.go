// Package control is what a person sets of a whole crawl: its settings
// hash, written once by the first seeding (config.go), the settings
// version in force in every shard, which each shard's pops read ('crawler
// set': settings.go, settings.lua), the crawl's pause ('crawler pause',
// 'crawler resume': hold.go, hold.lua) and the seeds' hosts, its scope
// (config.go). Its keys are the crawl's (package keyspace).
package control

import (
	"embed"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/queue"
	"github.com/redcrawl/crawler/internal/script"
)

// Crawl is the controls of a whole crawl (frontier.Frontier.Control).
type Crawl struct{ keyspace.Set }

var (
	//go:embed *.lua
	luaFiles embed.FS
	lua      = script.NewLib("frontier/control", luaFiles, queue.Lua)
)
