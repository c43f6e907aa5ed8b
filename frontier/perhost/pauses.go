package perhost

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redcrawl/crawler/politeness"
	"github.com/redis/go-redis/v9"
)

// Pause stops host for every worker: its bucket is paused
// (politeness.Limiter.Pause: the server's Retry-After, or a back-off that
// doubles with repeats), and no pop offers it before the pause ends. Why
// ("a 429", "3 failed requests") is kept in the bucket, and the pause is
// listed in its shard's Pauses for Controls.Paused, and the host marked in
// Slowed, whose bucket hashes are the only ones the pops read: all in one
// script, so that no failure can leave a pause the pops do not see. It
// returns the pause.
func (f Controls) Pause(ctx context.Context, host string, retryAfter time.Duration, why string) (time.Duration, error) {
	_, k := f.For(host)
	return politeness.NewLimiter(f.C, politeness.Inf, 1).PauseWith(ctx, f.bucketKey(host), retryAfter,
		politeness.PauseNote{Why: why, Index: k.Pauses, Member: host, Mark: k.Slowed})
}

// PausedHost is a host paused now, as Controls.Paused reads it.
type PausedHost struct {
	Host string        `json:"host"`
	Left time.Duration `json:"left_ns"` // until the pause ends, by Redis's clock
	Why  string        `json:"why,omitempty"`
}

// MaxPausedListed bounds the pauses Controls.Paused reads a shard: those that
// end last.
const MaxPausedListed = 1000

// Paused lists the hosts paused now, the longest pause first: one
// round trip over the shards' Pauses, and one more for why when any is.
func (f Controls) Paused(ctx context.Context) ([]PausedHost, error) {
	pipe := f.C.Pipeline()
	now := pipe.Time(ctx)
	lists := make([]*redis.ZSliceCmd, len(f.Keys))
	for i, k := range f.Keys {
		lists[i] = pipe.ZRevRangeWithScores(ctx, k.Pauses, 0, MaxPausedListed-1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("frontier: paused hosts: %w", err)
	}
	nowMs := float64(now.Val().UnixMicro()) / 1000 // the index's scores are ms to the µs
	var out []PausedHost
	why := f.C.Pipeline()
	var whys []*redis.StringCmd
	for _, l := range lists {
		for _, z := range l.Val() {
			if z.Score <= nowMs {
				break // the rest ended before
			}
			host := z.Member.(string)
			out = append(out, PausedHost{Host: host, Left: time.Duration((z.Score - nowMs) * float64(time.Millisecond)).Truncate(time.Microsecond)})
			whys = append(whys, why.HGet(ctx, f.bucketKey(host), "why"))
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	if _, err := why.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("frontier: paused hosts: %w", err)
	}
	for i, w := range whys {
		out[i].Why = w.Val() // "": the bucket went, or was paused without one
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Left > out[j].Left })
	return out, nil
}

// Bucket is a host's token bucket as it stands (politeness/tokens.lua's
// arithmetic, read, not written): the tokens it holds now, and the rate
// and burst it fills at; Rate 0 means no limit.
type Bucket struct {
	Tokens float64 `json:"tokens"`
	Rate   float64 `json:"rate"` // tokens a second
	Burst  int     `json:"burst"`
}

// bucketAt is the bucket full at tat (ms: the host's score in ready,
// tokens.lua) as it stands at nowUs, filling at rate up to burst (rate 0:
// no limit), and how long until it has a token.
func bucketAt(tat float64, nowUs int64, rate float64, burst int) (Bucket, time.Duration) {
	b := Bucket{Tokens: float64(burst), Rate: rate, Burst: burst}
	if rate == 0 {
		return b, max(time.Duration((tat*1000-float64(nowUs))*float64(time.Microsecond)), 0)
	}
	now := float64(nowUs) / 1000
	if tat > now {
		b.Tokens = float64(burst) - (tat-now)*rate/1000
	}
	first := tat - float64(burst-1)*1000/rate // when it has a token
	return b, max(time.Duration((first-now)*float64(time.Millisecond)), 0)
}
