package alternatives

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redcrawl/crawler/politeness"
	"github.com/redis/go-redis/v9"
)

// A Limiter decides, for one request to host, whether it goes and when
// (Redis's clock): a limiter that queues (the leaky bucket as a queue)
// lets a request go later than it asked.
type Limiter interface {
	Name() string
	Take(ctx context.Context, host string) (ok bool, at time.Time, err error)
}

// Limiters are the five, each allowing rate requests a second: the
// crawl's token bucket and the leaky bucket (meter and queue) with burst
// (the queue: burst requests waiting at most), the two windows with rate
// requests a window of a second. Their keys start with prefix.
func Limiters(c redis.Scripter, prefix string, rate float64, burst int) []Limiter {
	return WindowLimiters(c, prefix, rate, burst, int(rate), time.Second)
}

// WindowLimiters are the five with the windows' limit and length given.
func WindowLimiters(c redis.Scripter, prefix string, rate float64, burst, limit int, window time.Duration) []Limiter {
	win := window.Milliseconds()
	return []Limiter{
		TokenBucket{politeness.NewLimiter(c, politeness.Limit(rate), burst), prefix + "tb:"},
		scripted{"leaky bucket (meter)", c, leakyMeterScript, prefix + "lm:", []any{rate, burst}},
		scripted{"leaky bucket (queue)", c, leakyQueueScript, prefix + "lq:", []any{rate, burst}},
		scripted{"fixed window", c, fixedWindowScript, prefix + "fw:", []any{limit, win}},
		scripted{"sliding-window log", c, slidingLogScript, prefix + "sl:", []any{limit, win}},
	}
}

// TokenBucket is the crawl's own: politeness.Limiter (GCRA on Redis's
// clock, tokens.lua, the arithmetic the crawl's pops take tokens with).
type TokenBucket struct {
	l      *politeness.Limiter
	prefix string
}

func (TokenBucket) Name() string { return "token bucket (RedCrawl's)" }

func (b TokenBucket) Take(ctx context.Context, host string) (bool, time.Time, error) {
	r, err := b.l.ReserveN(ctx, b.prefix+host, 1, 0)
	return r.OK, r.At, err
}

// scripted is a limiter of this package's scripts: {ok, µs} replies.
type scripted struct {
	name   string
	c      redis.Scripter
	s      *redis.Script
	prefix string
	args   []any
}

func (l scripted) Name() string { return l.name }

func (l scripted) Take(ctx context.Context, host string) (bool, time.Time, error) {
	res, err := l.s.Run(ctx, l.c, []string{l.prefix + host}, l.args...).Slice()
	if err != nil {
		return false, time.Time{}, fmt.Errorf("%s: %w", l.name, err)
	}
	if len(res) != 2 {
		return false, time.Time{}, fmt.Errorf("%s: reply %v", l.name, res)
	}
	ok, _ := res[0].(int64)
	s, _ := res[1].(string)
	us, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("%s: time %q", l.name, s)
	}
	return ok == 1, time.UnixMicro(us), nil
}
