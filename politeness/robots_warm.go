package politeness

import (
	"context"
	"net/url"

	"github.com/redis/go-redis/v9"
)

// maxWarming bounds the Warm calls reading at once (a crawler makes one a pop).
const maxWarming = 4

// Warm reads, in one round trip, the robots.txt answers Redis holds for
// the URLs' origins that this process does not, and keeps them, without
// waiting for the read. A crawler calls it with the URLs it was just
// handed: its fetch loops, each taking one when it is free, then find the
// answers here instead of each asking Redis alone. An origin Redis has no
// answer for is left to its Check, which fetches robots.txt (under the
// lock) when its URL is taken, as without Warm: fetched here, every new
// host's robots.txt would be fetched at once, up to a pop's worth, before
// its URL's turn. With maxWarming reads running, Warm does nothing.
func (r *Robots) Warm(ctx context.Context, urls []string) {
	type want struct{ origin, host, key string }
	var wants []want
	started := map[string]bool{}
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			continue // its Check says what is wrong with it
		}
		origin := u.Scheme + "://" + u.Host
		if started[origin] {
			continue
		}
		started[origin] = true
		if _, ok := r.cached(origin); !ok {
			wants = append(wants, want{origin, u.Host, r.Key(u.Scheme, u.Host)})
		}
	}
	if len(wants) == 0 {
		return
	}
	select {
	case r.warming <- struct{}{}:
	default:
		return
	}
	go func() {
		defer func() { <-r.warming }()
		rds := make([]reads, len(wants))
		err := r.pipes.do(ctx, func(pipe redis.Pipeliner) {
			for i, w := range wants {
				rds[i] = r.read(ctx, pipe, w.key)
			}
		})
		if err != nil {
			return
		}
		for i, w := range wants {
			if rds[i].err() != nil {
				continue // its Check reads again, and reports
			}
			if e, found := r.decode(rds[i], w.host); found {
				r.remember(w.origin, e)
			}
		}
	}()
}
