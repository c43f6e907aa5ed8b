package politeness

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// Limit is a rate of events per second.
type Limit float64

// Inf is the rate without limit: every request succeeds at once.
const Inf = Limit(math.MaxFloat64)

// InfDuration is the delay of a reservation that can never be met.
const InfDuration = time.Duration(math.MaxInt64)

// Every converts an interval between events to a Limit.
func Every(interval time.Duration) Limit {
	if interval <= 0 {
		return Inf
	}
	return 1 / Limit(interval.Seconds())
}

var (
	// ErrExceedsBurst: n is larger than the bucket, so it could never be served.
	ErrExceedsBurst = errors.New("politeness: n exceeds the burst")
	// ErrWouldExceedDeadline: Wait would have to wait past its context's deadline.
	ErrWouldExceedDeadline = errors.New("politeness: wait would exceed the context deadline")
	// ErrZeroRate: the rate is 0, so no request is ever allowed.
	ErrZeroRate = errors.New("politeness: rate is zero")
)

var (
	//go:embed *.lua
	luaFiles embed.FS
	// Lua is the package's Lua: its module tokens (tokens.lua), a token
	// bucket's arithmetic as Lua functions, which the Limiter's script
	// requires, and so does the frontier's pop, which takes a host's
	// token in the same call that hands out the host's URL; and the
	// package's own scripts.
	Lua          = script.NewLib("politeness", luaFiles)
	bucketScript = Lua.Script("bucket")
)

// Limiter is a token bucket per key, kept in Redis and shared by every
// process that uses the same keys: it admits events at rate r per second on
// average, with bursts of up to b. Its methods mirror golang.org/x/time/rate
// (AllowN, ReserveN, WaitN), but each call is one atomic script on the
// server, timed by the server's clock, so N workers together get r, not N·r.
//
// Rate Inf admits everything without calling Redis. Rate 0 admits nothing
// (unlike x/time/rate, which lets a first burst through: a host with rate 0
// is blocked). A Limiter is immutable and safe for concurrent use.
type Limiter struct {
	c     redis.Scripter
	limit Limit
	burst int
}

// NewLimiter returns a Limiter of rate r and burst b over the client c.
func NewLimiter(c redis.Scripter, r Limit, b int) *Limiter {
	return &Limiter{c: c, limit: r, burst: b}
}

// Limit is the rate.
func (l *Limiter) Limit() Limit { return l.limit }

// Burst is the bucket size.
func (l *Limiter) Burst() int { return l.burst }

// WithLimit returns a Limiter over the same client with another rate and
// burst (for a host whose robots.txt asks for a Crawl-delay, say).
func (l *Limiter) WithLimit(r Limit, b int) *Limiter { return &Limiter{c: l.c, limit: r, burst: b} }

// Reservation is the answer to ReserveN.
type Reservation struct {
	// OK is true when the tokens were taken: act after Delay.
	OK bool
	// Delay is how long to wait before acting (OK), or how long one would
	// have had to wait (not OK; InfDuration when never). With r = 2/s and
	// an empty bucket, ReserveN(1) gives Delay = 500ms.
	Delay time.Duration
	// At is when the bucket decided, by Redis's clock (zero where Redis
	// was not asked: rate Inf or 0, n <= 0): the tokens may be used from
	// At + Delay.
	At time.Time

	n    int     // tokens taken
	slot float64 // the first one's slot, µs (bucket.lua): what Cancel gives back
	act  float64 // when they may be used, µs
}

// Allow is AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (bool, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN takes n tokens if they are there now, and reports whether it did.
func (l *Limiter) AllowN(ctx context.Context, key string, n int) (bool, error) {
	r, err := l.ReserveN(ctx, key, n, 0)
	return r.OK, err
}

// ReserveN takes n tokens if they will be there within maxWait, and reports
// the delay before acting. When the wait would be longer, nothing is taken
// (a refused reservation never changes the bucket) and Delay tells how long
// it would have been, so a caller can come back then.
// maxWait < 0 accepts any wait.
func (l *Limiter) ReserveN(ctx context.Context, key string, n int, maxWait time.Duration) (Reservation, error) {
	switch {
	case l.limit == Inf:
		return Reservation{OK: true}, nil
	case n > l.burst:
		return Reservation{Delay: InfDuration}, fmt.Errorf("%w: n=%d, burst=%d", ErrExceedsBurst, n, l.burst)
	case l.limit <= 0 || math.IsNaN(float64(l.limit)):
		return Reservation{Delay: InfDuration}, nil
	case n <= 0:
		return Reservation{OK: true}, nil
	}
	mw := int64(-1)
	if maxWait >= 0 {
		mw = int64(maxWait)
	}
	res, err := bucketScript.Run(ctx, l.c, []string{key}, l.rate(), l.burst, n, mw, PauseMemory.Milliseconds()).Slice()
	if err != nil {
		return Reservation{}, fmt.Errorf("politeness: bucket %s: %w", key, err)
	}
	if len(res) != 4 {
		return Reservation{}, fmt.Errorf("politeness: bucket %s: unexpected reply %v", key, res)
	}
	ok, _ := res[0].(int64)
	s, _ := res[1].(string)
	wait, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Reservation{}, fmt.Errorf("politeness: bucket %s: bad wait %q", key, s)
	}
	d := InfDuration
	if wait < float64(math.MaxInt64) {
		d = time.Duration(wait)
	}
	at, _ := res[2].(string)
	us, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return Reservation{}, fmt.Errorf("politeness: bucket %s: bad time %q", key, at)
	}
	r := Reservation{OK: ok == 1, Delay: d, At: time.UnixMicro(us)}
	if r.OK {
		slot, _ := res[3].(string)
		if r.slot, err = strconv.ParseFloat(slot, 64); err != nil {
			return Reservation{}, fmt.Errorf("politeness: bucket %s: bad slot %q", key, slot)
		}
		r.n, r.act = n, float64(us)+wait/1000
	}
	return r, nil
}

// rate is the rate as the scripts read it.
func (l *Limiter) rate() string { return strconv.FormatFloat(float64(l.limit), 'f', -1, 64) }

var refundScript = Lua.Script("refund")

// Cancel gives back the tokens of r, a reservation of key's bucket whose
// event will not happen, as far as it can: as x/time/rate's
// Reservation.Cancel, nothing when r's time to act has passed, and only
// tokens no later reservation was given after. It runs tokens.lua's
// tb_refund, the rule by which the crawl's pop takes back the token of a
// request that never went: only the bucket's last tokens go back, latest
// first, so that no token taken since moves. Where x/time/rate restores
// some of a burst's tokens taken before others still held, this gives back
// none (the oracle test checks it never gives back more). It returns how
// much sooner the bucket is full again (0: nothing went back).
func (l *Limiter) Cancel(ctx context.Context, key string, r Reservation) (time.Duration, error) {
	if !r.OK || r.n <= 0 || l.limit == Inf || l.limit <= 0 || math.IsNaN(float64(l.limit)) {
		return 0, nil
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	s, err := refundScript.Run(ctx, l.c, []string{key}, l.rate(), f(r.act), f(r.slot), r.n).Text()
	if err != nil {
		return 0, fmt.Errorf("politeness: refund %s: %w", key, err)
	}
	us, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("politeness: refund %s: bad reply %q", key, s)
	}
	return time.Duration(us * 1000), nil
}

// Wait is WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) error { return l.WaitN(ctx, key, 1) }

// WaitN blocks until n tokens are taken, or returns an error if that cannot
// happen before ctx's deadline (without taking them) or ctx ends while
// waiting (the taken tokens are then not given back: erring towards fewer
// requests is the polite failure).
func (l *Limiter) WaitN(ctx context.Context, key string, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.limit <= 0 && n > 0 {
		return ErrZeroRate
	}
	maxWait := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		maxWait = max(time.Until(dl), 0)
	}
	r, err := l.ReserveN(ctx, key, n, maxWait)
	if err != nil {
		return err
	}
	if !r.OK {
		return fmt.Errorf("%w: n=%d needs %v", ErrWouldExceedDeadline, n, r.Delay)
	}
	if r.Delay <= 0 {
		return nil
	}
	t := time.NewTimer(r.Delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Pause back-off: the first pause of a host, the longest, and how long a
// host's count of pauses is remembered after a pause.
const (
	PauseMin    = time.Second
	PauseMax    = 5 * time.Minute
	PauseMemory = 10 * time.Minute
)

var pauseScript = Lua.Script("pause")

// Pause stops the host of the bucket at key for every worker: no token is
// given before the pause ends (ReserveN answers not OK, with the delay).
// The host answered 429 or 503: the pause is its Retry-After, or a back-off
// that doubles with each pause not halved since by a granted token, from
// PauseMin to PauseMax. It returns the pause. With rate Inf no bucket is
// asked, so a pause has no effect.
func (l *Limiter) Pause(ctx context.Context, key string, retryAfter time.Duration) (time.Duration, error) {
	return l.PauseWith(ctx, key, retryAfter, PauseNote{})
}

// PauseNote is what a pause leaves for those who read it (frontier's
// Hosts.Paused lists pauses by their index and why).
type PauseNote struct {
	Why string // kept in the bucket's hash (field "why")
	// Index, when not empty, is a sorted set in the bucket's hash slot
	// that lists pauses: Member scored by when its pause ends (ms, Redis's
	// clock). Each pause noted there removes the ended ones.
	Index, Member string
	// Mark, when not empty (with Index), is a hash in the same slot where
	// Member is set to 1 in the same atomic step as the pause: for readers
	// that read only the buckets of marked members (frontier's slowed
	// hosts), to which a pause without its mark would not exist.
	Mark string
}

// PauseWith is Pause, noting why and where the pause is listed.
func (l *Limiter) PauseWith(ctx context.Context, key string, retryAfter time.Duration, n PauseNote) (time.Duration, error) {
	keys := []string{key}
	switch {
	case n.Mark != "" && n.Index == "":
		return 0, fmt.Errorf("politeness: pause %s: a mark needs an index (PauseNote)", key)
	case n.Mark != "":
		keys = append(keys, n.Index, n.Mark)
	case n.Index != "":
		keys = append(keys, n.Index)
	}
	ms, err := pauseScript.Run(ctx, l.c, keys, max(retryAfter, 0).Milliseconds(),
		PauseMin.Milliseconds(), PauseMax.Milliseconds(), PauseMemory.Milliseconds(), n.Why, n.Member).Int64()
	if err != nil {
		return 0, fmt.Errorf("politeness: pause %s: %w", key, err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
