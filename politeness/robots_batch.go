package politeness

import (
	"context"
	"sync"
	"time"

	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// pipelines runs the Redis work of one process's robots.txt checks in
// shared pipelines, as a group commit: what the checks ask while a
// pipeline is in flight goes in the next one, all of it in one round
// trip. A worker's fetch loops meet new hosts together (at a crawl's start
// each of 64 loops looks up a different host's robots.txt at once), and a
// round trip costs Redis more than the few small commands of a lookup do:
// reading the request, writing the reply and waking its event loop (an
// idle Redis on the 2-core development machine spends ~100 us of CPU on a
// round trip of three small commands, ~16 us back to back). So a pipeline
// also waits linger for company before it goes: the lookups of the hosts
// a pop handed out (Warm) start together, their robots.txt fetches end
// within milliseconds of each other, and so their stores go together; a
// new host's first page waits a few milliseconds more, once.
//
// No goroutine lives between checks: the first request finding none
// running starts one, and it ends when nothing is left to send.
type pipelines struct {
	c       redis.UniversalClient
	linger  time.Duration // how long a pipeline waits for more requests, from the first
	mu      sync.Mutex
	pending []*pipelined
	running bool
	// queued, when set (tests), hears of each request queued, with the
	// number then waiting.
	queued func(waiting int)
}

// pipelined is one request: the commands it adds to a pipeline, and done,
// closed once the pipeline ran (each request reads its own commands'
// results and errors: another's failure is not its own).
type pipelined struct {
	add  func(redis.Pipeliner)
	done chan struct{}
}

// maxPipelined bounds the requests one pipeline carries.
const maxPipelined = 256

// robotsLinger is how long the robots cache's pipelines wait for company.
const robotsLinger = 5 * time.Millisecond

// do adds add's commands to the next pipeline and waits until it ran, or
// ctx ends (the commands may still run then; their results are not read).
func (p *pipelines) do(ctx context.Context, add func(redis.Pipeliner)) error {
	req := &pipelined{add: add, done: make(chan struct{})}
	p.mu.Lock()
	p.pending = append(p.pending, req)
	if p.queued != nil {
		p.queued(len(p.pending))
	}
	if !p.running {
		p.running = true
		go p.run()
	}
	p.mu.Unlock()
	select {
	case <-req.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run sends pipelines, the first linger after the request that started
// it, until no request waits. A pipeline is bounded by
// the client's read and write timeouts, not by any one request's context:
// it carries others' requests too.
func (p *pipelines) run() {
	time.Sleep(p.linger) // what comes meanwhile goes along; later ones wait for this pipeline anyway
	for {
		p.mu.Lock()
		reqs := p.pending
		if len(reqs) > maxPipelined {
			reqs = reqs[:maxPipelined:maxPipelined]
			p.pending = append([]*pipelined(nil), p.pending[maxPipelined:]...)
		} else {
			p.pending = nil
		}
		if len(reqs) == 0 {
			p.running = false
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		pipe := p.c.Pipeline()
		for _, req := range reqs {
			req.add(pipe)
		}
		pipe.Exec(context.Background()) // each request reads its own commands' errors
		for _, req := range reqs {
			close(req.done)
		}
	}
}

// script runs s in the next pipeline by its SHA, or on its own when Redis
// does not hold it (the first run since Redis started, or after SCRIPT
// FLUSH), which loads it for the next.
func (p *pipelines) script(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	var call *script.Queued
	if err := p.do(ctx, func(pipe redis.Pipeliner) { call = script.Queue(ctx, pipe, s, keys, args...) }); err != nil {
		return redis.NewCmdResult(nil, err)
	}
	return call.Cmd(ctx, p.c)
}
