package control

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// The crawl's pause: one key in each shard (keyspace.Keys.Paused), which that
// shard's pops read in the same call that would pop (handout.lua), so a
// worker that missed every message still pops nothing while it exists.

var (
	holdScript = lua.Script("hold")
)

// WakePaused is the message a pause sends on each shard's wake channel
// (Wakes): a worker gives back the URLs waiting in its buffer then, not at
// its next exchange, which says the same from Redis's own state.
const WakePaused = "paused"

// Hold is a paused crawl's pause: since when, by whom, in how many of its
// shards (all of them but after a Pause or Resume that failed half-way).
type Hold struct {
	Since  time.Time `json:"since"`
	By     string    `json:"by"`
	Shards int       `json:"shards"` // shards paused
	Of     int       `json:"of"`     // shards in all
}

// Pause pauses the crawl: no pop in any shard hands out a URL until
// Resume. Workers go on finishing, recording and sending the pages they
// hold, renewing their leases; the scheduler goes on sweeping. One atomic
// step a shard, shard by shard: when it returns, no shard pops. changed is
// false when it was paused already (its first pause's time and author
// stand). who says who asked, for status and the event log.
func (f Crawl) Pause(ctx context.Context, who string) (changed bool, err error) {
	return f.hold(ctx, "pause", who)
}

// Resume ends a pause: every shard pops again, its workers woken at once
// (each shard's wake channel). changed is false when it was not paused.
func (f Crawl) Resume(ctx context.Context) (changed bool, err error) {
	return f.hold(ctx, "resume", "")
}

func (f Crawl) hold(ctx context.Context, mode, who string) (bool, error) {
	changed := false
	for _, k := range f.Keys {
		n, err := holdScript.Run(ctx, f.C, []string{k.Config, k.Paused}, f.Instance, mode, who, k.Wake()).Int()
		switch {
		case keyspace.IsGone(err):
			return changed, keyspace.ErrGone
		case err != nil:
			return changed, fmt.Errorf("frontier: %s: %w", mode, err)
		}
		changed = changed || n == 1
	}
	return changed, nil
}

// Paused reads the crawl's pause: nil when no shard is paused.
func (f Crawl) Paused(ctx context.Context) (*Hold, error) {
	vals := make([]*redis.StringCmd, len(f.Keys))
	_, err := f.C.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range f.Keys {
			vals[i] = p.Get(ctx, k.Paused)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("frontier: reading the pause: %w", err)
	}
	var h *Hold
	for _, v := range vals {
		s, err := v.Result()
		if err != nil {
			continue
		}
		if h == nil {
			h = &Hold{Of: len(f.Keys)}
			ms, by, _ := strings.Cut(s, "\n")
			if n, err := strconv.ParseInt(ms, 10, 64); err == nil {
				h.Since = time.UnixMilli(n)
			}
			h.By = by
		}
		h.Shards++
	}
	return h, nil
}
