// Package rendering is what a crawl's render workers share in Redis: the
// lanes (which hosts' URLs only a worker with a browser pops: lanes.go,
// lane.lua), the samples a crawl learns a host's need of a browser from
// (seed --render auto: samples.go, samples.lua), the cache of rendered
// pages' subresources (subcache.go) and the tokens a rendered page's
// subresources take from their hosts' buckets (token.go, token.lua).
// Its keys are the crawl's (package keyspace); the queue's Lua it
// requires is package queue's.
package rendering

import (
	"embed"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/queue"
	"github.com/redcrawl/crawler/internal/script"
)

// Shared is what a crawl's render workers share (frontier.Frontier.Render).
type Shared struct{ keyspace.Set }

var (
	//go:embed *.lua
	luaFiles embed.FS
	lua      = script.NewLib("frontier/rendering", luaFiles, queue.Lua)
)
