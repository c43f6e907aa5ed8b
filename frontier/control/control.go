// Package control is what a person changes of a whole crawl while its
// workers run, in every shard, and what each shard's pops read: the
// settings version in force ('crawler set': settings.go, settings.lua)
// and the crawl's pause ('crawler pause', 'crawler resume': hold.go,
// hold.lua). Its keys are the crawl's (package keyspace).
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
