package session

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"

	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
	"golang.org/x/net/publicsuffix"
)

var (
	//go:embed swap.lua
	swapSrc string
	//go:embed used.lua
	usedSrc string

	swapScript = fence.NewScript("session/swap", swapSrc)
	usedScript = script.New("session/used", usedSrc)
)

// A Snapshot is the session as Redis holds it: its generation (0: no
// login yet), whether the last login failed and why, the cookies the
// login set (Hops), the newest generation a request got past the
// logged-out page with (Used), and how many logins in a row no request
// did (Strikes).
type Snapshot struct {
	Gen     int64
	Failed  bool
	Why     string
	Hops    []Hop
	Used    int64
	Strikes int64
}

// A Hop is a response of the login's exchange: its URL and the
// Set-Cookie headers it sent.
type Hop struct {
	URL        string   `json:"u"`
	SetCookies []string `json:"c"`
}

// read is the session at key.
func read(ctx context.Context, c redis.Cmdable, key string) (Snapshot, error) {
	v, err := c.HMGet(ctx, key, "gen", "state", "why", "cookies", "used", "strikes").Result()
	if err != nil {
		return Snapshot{}, fmt.Errorf("session: reading the session: %w", err)
	}
	var s Snapshot
	str := func(i int) string { x, _ := v[i].(string); return x }
	for i, n := range map[int]*int64{0: &s.Gen, 4: &s.Used, 5: &s.Strikes} {
		if x := str(i); x != "" {
			if *n, err = strconv.ParseInt(x, 10, 64); err != nil {
				return Snapshot{}, fmt.Errorf("session: %q is not a number", x)
			}
		}
	}
	s.Failed, s.Why = str(1) == "failed", str(2)
	if raw := str(3); raw != "" && !s.Failed {
		if err := json.Unmarshal([]byte(raw), &s.Hops); err != nil {
			return Snapshot{}, fmt.Errorf("session: its cookies are not readable: %v", err)
		}
	}
	return s, nil
}

// swap writes the session after generation seen, as the holder of the
// lock of epoch epoch (epochKey its counter): ok with hops, or failed
// with why. It returns the session's generation after it (seen + 1 when
// it wrote; higher when another worker had renewed it first), or an error
// wrapping fence.ErrFenced when the lock has passed to another since.
func swap(ctx context.Context, c redis.Scripter, key, epochKey string, epoch, seen, strikes int64, hops []Hop, why string) (int64, error) {
	state, payload := "ok", why
	if why == "" {
		b, err := json.Marshal(hops)
		if err != nil {
			return 0, err
		}
		payload = string(b)
	} else {
		state = "failed"
	}
	res, err := swapScript.Run(ctx, c, epochKey, epoch, []string{key}, seen, state, payload, strikes)
	if err != nil {
		if errors.Is(err, fence.ErrFenced) {
			return 0, err
		}
		return 0, fmt.Errorf("session: writing the session: %w", err)
	}
	gen, ok := res.(int64)
	if !ok {
		return 0, fmt.Errorf("session: writing the session: reply %v", res)
	}
	return gen, nil
}

// jarOf is a cookie jar holding the cookies hops set, each scoped as a
// browser would scope it to the URL that set it.
func jarOf(hops []Hop) *cookiejar.Jar {
	jar, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List}) // never fails
	for _, h := range hops {
		u, err := url.Parse(h.URL)
		if err != nil {
			continue
		}
		resp := http.Response{Header: http.Header{"Set-Cookie": h.SetCookies}}
		jar.SetCookies(u, resp.Cookies())
	}
	return jar
}
