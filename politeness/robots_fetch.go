package politeness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcrawl/crawler/internal/script"
)

// The fetch of robots.txt by the one worker that holds its origin's lock,
// and the store of its answer (or of its unavailability) that releases the
// lock in the same script.

var (
	robotsStoreScript = Lua.Script("robots_store")
	robotsFailScript  = Lua.Script("robots_fail")
)

const maxRobotsBody = 500 << 10 // RFC 9309 asks parsers to read at least 500 KiB

// keepFailures is how long a failure history outlives its next try, so a
// give-up can be measured from the first failure.
const keepFailures = time.Hour

// fetchAndStore fetches robots.txt under the lock (token) and stores the
// answer, releasing the lock in the same call; stored says it was.
func (r *Robots) fetchAndStore(ctx context.Context, robotsURL, key, host, token string) (e robotsEntry, stored bool, err error) {
	status, body, err := r.fetchFollowing(ctx, robotsURL)
	if err != nil {
		if ctx.Err() != nil {
			return robotsEntry{}, false, ctx.Err()
		}
		status, body = 0, nil
	}
	keys := []string{key, key + ":lock"}
	if unavailable(status) {
		res, err := r.pipes.script(ctx, robotsFailScript, keys, status, r.Backoff.Milliseconds(),
			r.MaxBackoff.Milliseconds(), keepFailures.Milliseconds(), token).Int64Slice()
		if err != nil || len(res) != 3 {
			return robotsEntry{}, false, fmt.Errorf("politeness: robots %s: %v %w", key, res, err)
		}
		retry := time.Duration(res[2]) * time.Millisecond
		return robotsEntry{ttl: retry, unavail: &UnavailableError{Host: host, Status: status, Failures: int(res[0]),
			Since: time.Duration(res[1]) * time.Millisecond, Retry: retry}}, true, nil
	}
	if len(body) > maxRobotsBody {
		// Read up to the limit, and drop the line it cut: a rule cut short
		// is another rule (Allow: /abc/public would become Allow: /abc).
		body = body[:maxRobotsBody]
		body = body[:bytes.LastIndexAny(body, "\r\n")+1]
	}
	// Redis and the local cache keep only what the crawl's agent reads of
	// the file (RobotsTxt.For); the hook hears of the whole of it (its
	// sitemaps).
	full := r.parse(status, body)
	data := full.For(r.agent)
	if err := r.pipes.script(ctx, robotsStoreScript, keys, status, data.compact(), r.TTL.Milliseconds(), token).Err(); err != nil {
		return robotsEntry{}, false, fmt.Errorf("politeness: robots %s: %w", key, err)
	}
	if r.OnFetched != nil {
		r.OnFetched(ctx, robotsURL, full)
	}
	return robotsEntry{data: data, ttl: r.TTL}, true, nil
}

// fetchFollowing follows up to five redirects (RFC 9309 §2.3.1.2).
func (r *Robots) fetchFollowing(ctx context.Context, u string) (int, []byte, error) {
	for hop := 0; hop <= 5; hop++ {
		res, err := r.fetch(ctx, u)
		if err != nil || res.Status < 300 || res.Status >= 400 || res.Location == "" {
			return res.Status, res.Body, err
		}
		u = res.Location
	}
	return 0, nil, errors.New("politeness: robots.txt redirects more than 5 times")
}

var unlockScript = script.New("politeness/unlock", `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

func (r *Robots) unlock(ctx context.Context, key, token string) {
	unlockScript.Run(context.WithoutCancel(ctx), r.c, []string{key + ":lock"}, token)
}
