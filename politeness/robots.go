package politeness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"
)

// RobotsResponse is what a RobotsFetcher got.
type RobotsResponse struct {
	Status   int
	Body     []byte
	Location string // a redirect's target, resolved
}

// RobotsFetcher GETs a robots.txt without following redirects; an error
// means no answer (unreachable, timeout).
type RobotsFetcher func(ctx context.Context, url string) (RobotsResponse, error)

// ErrRobotsPending: another worker is fetching this host's robots.txt right
// now; try the URL again shortly (defer it, do not drop it).
var ErrRobotsPending = errors.New("politeness: robots.txt is being fetched by another worker")

// ErrRobotsUnavailable: the host's robots.txt could not be had (no answer,
// 429 or 5xx). RFC 9309 says: crawl nothing of the host *now* — not
// "never", and not "everything". Errors that wrap it are
// *UnavailableError, which say for how long and until when.
var ErrRobotsUnavailable = errors.New("politeness: robots.txt unavailable")

// UnavailableError says how a host's robots.txt has been unavailable.
type UnavailableError struct {
	Host     string
	Status   int           // the last answer's status; 0 for none
	Failures int           // fetches failed in a row
	Since    time.Duration // since the first of them
	Retry    time.Duration // until the next fetch may be tried (shared by every worker)
}

func (e *UnavailableError) Error() string {
	what := "no answer"
	if e.Status != 0 {
		what = fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("politeness: robots.txt of %s unavailable (%s; %d tries over %v); next try in %v",
		e.Host, what, e.Failures, e.Since.Round(time.Second), e.Retry.Round(time.Millisecond))
}

func (e *UnavailableError) Unwrap() error { return ErrRobotsUnavailable }

// unavailable: the statuses RFC 9309 treats as "no robots.txt for now"
// (429 too, as the large crawlers do: the server asks us to come back).
func unavailable(status int) bool {
	return status == 0 || status == http.StatusTooManyRequests || status >= 500
}

// Robots answers "may we fetch this URL?" for a whole crawl cluster: each
// host's robots.txt is fetched once per TTL by one worker (under a short
// Redis lock), and kept in Redis for every worker, and in a small local
// cache per process. RFC 9309: 2xx is obeyed, 4xx allows all; 5xx, 429
// or no answer make Check return an *UnavailableError until the next try,
// with a back-off shared by every worker (never "deny forever", never
// "allow on error"): the caller holds the host's URLs back.
type Robots struct {
	c      redis.UniversalClient
	prefix string // key = prefix + "{" + scheme://host + "}": the origin is the hash tag
	// KeyFor, when set, names an origin's key instead (a crawl that keeps
	// a host's keys in its frontier shard's slot). The lock is Key + ":lock".
	// A robots.txt is scoped to its scheme, host and port (RFC 9309 §2.3):
	// http://h/ and https://h/ have one each.
	KeyFor func(scheme, host string) string
	agent  string // product token matched against User-agent lines
	fetch  RobotsFetcher
	TTL    time.Duration // how long a 2xx/4xx answer is kept (24 h)
	// Backoff is the wait after a first failure to get robots.txt (1 s);
	// it doubles with each failure in a row, up to MaxBackoff (5 min).
	Backoff, MaxBackoff time.Duration
	MaxLocal            int           // hosts kept in the local cache (10 000)
	MaxLocalBytes       int           // and bytes of their rules at most (64 MiB)
	LockTTL             time.Duration // how long one worker may take to fetch (15 s)
	WaitFor             time.Duration // how long to wait for another worker's fetch (3 s)
	// OnFetched, when set, hears of each robots.txt this process fetched
	// and stored for the cluster (once per origin and TTL in the whole
	// crawl): its URL, and what it says.
	OnFetched func(ctx context.Context, robotsURL string, rt *RobotsTxt)
	// Lookups count where Check found each answer: this process's cache
	// (Local), Redis, filled by any worker (Shared), or a fetch by this
	// process (Fetched). For metrics.
	Lookups    struct{ Local, Shared, Fetched atomic.Int64 }
	mu         sync.Mutex
	local      map[string]robotsEntry
	localBytes int // the rules' size in local (RobotsTxt.size)
	// flight makes concurrent checks of one host in this process share one
	// Redis lookup: a worker's loops often start on the same host at once,
	// and would otherwise each look up, try the lock, retry and hold a
	// connection.
	flight    singleflight.Group
	pipes     pipelines     // the Redis calls of this process's checks, in shared round trips
	warming   chan struct{} // a slot of a Warm reading (maxWarming)
	now       func() time.Time
	lockDelay time.Duration
}

// robotsEntry is a host's robots.txt as Redis keeps it: its rules, or, while
// it is unavailable, why and until when.
type robotsEntry struct {
	data    *RobotsTxt
	unavail *UnavailableError // set (and data nil) while unavailable
	ttl     time.Duration     // how long the entry holds
	expires time.Time         // local clock, for the local cache
}

// result is the entry's answer: its rules, or the unavailability as of now.
func (e robotsEntry) result(now time.Time) (*RobotsTxt, error) {
	if e.unavail == nil {
		return e.data, nil
	}
	u := *e.unavail
	left := e.expires.Sub(now)
	u.Since += u.Retry - left
	u.Retry = max(left, 0)
	return nil, &u
}

// NewRobots returns the robots cache of one crawl. keyPrefix is e.g.
// "crawl:{NAME}:robots:" (or set KeyFor); agent is the crawler's product token ("RedCrawl").
func NewRobots(c redis.UniversalClient, keyPrefix, agent string, fetch RobotsFetcher) *Robots {
	return &Robots{c: c, pipes: pipelines{c: c, linger: robotsLinger}, prefix: keyPrefix, agent: agent, fetch: fetch,
		TTL: 24 * time.Hour, Backoff: time.Second, MaxBackoff: 5 * time.Minute, MaxLocal: 10000, MaxLocalBytes: 64 << 20, LockTTL: 15 * time.Second,
		WaitFor: 3 * time.Second, local: map[string]robotsEntry{}, now: time.Now, lockDelay: 100 * time.Millisecond,
		warming: make(chan struct{}, maxWarming)}
}

// Verdict is the answer for one URL.
type Verdict struct {
	Allowed    bool
	CrawlDelay time.Duration // the host's Crawl-delay for our agent, 0 if none (at most MaxCrawlDelay)
	// DelayCapped: the host asked for a Crawl-delay over MaxCrawlDelay.
	DelayCapped bool
}

// Key is the Redis key holding the robots.txt of scheme://host: KeyFor's,
// when set, else keyPrefix + "{" + scheme://host + "}".
func (r *Robots) Key(scheme, host string) string {
	if r.KeyFor != nil {
		return r.KeyFor(scheme, host)
	}
	return r.prefix + "{" + scheme + "://" + host + "}"
}

// Check decides for u (scheme and host give the robots.txt location).
func (r *Robots) Check(ctx context.Context, u *url.URL) (Verdict, error) {
	d, err := r.rules(ctx, u)
	if err != nil {
		return Verdict{}, err
	}
	path := u.EscapedPath()
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	v := Verdict{Allowed: d.Allowed(r.agent, path)}
	v.CrawlDelay, v.DelayCapped = d.CrawlDelay(r.agent)
	return v, nil
}

func (r *Robots) rules(ctx context.Context, u *url.URL) (*RobotsTxt, error) {
	origin := u.Scheme + "://" + u.Host
	if e, ok := r.cached(origin); ok {
		r.Lookups.Local.Add(1)
		return e.result(r.now())
	}
	v, err, _ := r.flight.Do(origin, func() (any, error) {
		// A check that missed the cache just before a flight ended starts
		// a flight of its own: the answer that flight remembered is here.
		if e, ok := r.cached(origin); ok {
			r.Lookups.Local.Add(1)
			return e, nil
		}
		return r.shared(ctx, u)
	})
	if err != nil {
		return nil, err
	}
	return v.(robotsEntry).result(r.now())
}

// cached is origin's entry in this process, if it has one not expired.
func (r *Robots) cached(origin string) (robotsEntry, bool) {
	r.mu.Lock()
	e, ok := r.local[origin]
	r.mu.Unlock()
	return e, ok && r.now().Before(e.expires)
}

// shared finds the entry in Redis, or fetches robots.txt under the
// cluster-wide lock, and remembers the entry locally.
func (r *Robots) shared(ctx context.Context, u *url.URL) (robotsEntry, error) {
	host, origin := u.Host, u.Scheme+"://"+u.Host
	key := r.Key(u.Scheme, host)
	deadline := r.now().Add(r.WaitFor)
	for {
		e, found, err := r.load(ctx, key, host)
		if err != nil {
			return robotsEntry{}, err
		}
		if found {
			r.Lookups.Shared.Add(1)
			return r.remember(origin, e), nil
		}
		// The lock, and a look again under it in the same round trip: the
		// previous holder may have stored the answer between our read and
		// our lock.
		token, got, e, found, err := r.lockAndLoad(ctx, key, host)
		if err != nil {
			return robotsEntry{}, err
		}
		if got {
			if found {
				r.Lookups.Shared.Add(1)
				r.unlock(ctx, key, token)
				return r.remember(origin, e), nil
			}
			// The store releases the lock in the same call; a fetch cut
			// short (the context ended) releases it here.
			e, stored, err := r.fetchAndStore(ctx, origin+"/robots.txt", key, host, token)
			r.Lookups.Fetched.Add(1)
			if !stored {
				r.unlock(ctx, key, token)
			}
			if err != nil {
				return robotsEntry{}, err
			}
			return r.remember(origin, e), nil
		}
		if !r.now().Before(deadline) {
			return robotsEntry{}, ErrRobotsPending
		}
		t := time.NewTimer(r.lockDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return robotsEntry{}, ctx.Err()
		case <-t.C:
		}
	}
}

func (r *Robots) remember(origin string, e robotsEntry) robotsEntry {
	e.expires = r.now().Add(e.ttl)
	size := e.size()
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.local[origin]; ok {
		r.localBytes -= old.size()
		delete(r.local, origin)
	}
	if size > r.MaxLocalBytes {
		return e // larger than the whole cache: used once, kept in Redis only
	}
	// Arbitrary origins go until both bounds hold: bounded memory, not an LRU.
	for o, old := range r.local {
		if len(r.local) < r.MaxLocal && r.localBytes+size <= r.MaxLocalBytes {
			break
		}
		r.localBytes -= old.size()
		delete(r.local, o)
	}
	r.local[origin] = e
	r.localBytes += size
	return e
}

// size is about how many bytes of memory the entry holds.
func (e robotsEntry) size() int {
	if e.data == nil {
		return 128
	}
	return 64 + e.data.size()
}

// LocalBytes is about how many bytes the local cache holds now.
func (r *Robots) LocalBytes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.localBytes
}

// load reads the stored entry; found is false when there is none, or when
// an unavailable robots.txt is due to be tried again.
func (r *Robots) load(ctx context.Context, key, host string) (robotsEntry, bool, error) {
	var rd reads
	if err := r.pipes.do(ctx, func(pipe redis.Pipeliner) { rd = r.read(ctx, pipe, key) }); err != nil {
		return robotsEntry{}, false, err
	}
	if err := rd.err(); err != nil {
		return robotsEntry{}, false, fmt.Errorf("politeness: robots %s: %w", key, err)
	}
	e, found := r.decode(rd, host)
	return e, found, nil
}

// lockAndLoad tries for the fetching worker's lock and reads the entry
// after it, in one round trip (a pipeline runs in order).
func (r *Robots) lockAndLoad(ctx context.Context, key, host string) (token string, got bool, e robotsEntry, found bool, err error) {
	var b [16]byte
	rand.Read(b[:])
	token = hex.EncodeToString(b[:])
	var lock *redis.BoolCmd
	var rd reads
	if err := r.pipes.do(ctx, func(pipe redis.Pipeliner) {
		lock = pipe.SetNX(ctx, key+":lock", token, r.LockTTL)
		rd = r.read(ctx, pipe, key)
	}); err != nil {
		return "", false, robotsEntry{}, false, err
	}
	if err := errors.Join(lock.Err(), rd.err()); err != nil {
		return "", false, robotsEntry{}, false, fmt.Errorf("politeness: robots lock %s: %w", key, err)
	}
	e, found = r.decode(rd, host)
	return token, lock.Val(), e, found, nil
}

// reads are the commands that read an entry: its fields, its TTL and
// Redis's clock.
type reads struct {
	h  *redis.SliceCmd
	pt *redis.DurationCmd
	tm *redis.TimeCmd
}

func (rd reads) err() error { return errors.Join(rd.h.Err(), rd.pt.Err(), rd.tm.Err()) }

// read queues the reads of the entry at key on pipe.
func (r *Robots) read(ctx context.Context, pipe redis.Pipeliner, key string) reads {
	return reads{pipe.HMGet(ctx, key, "status", "body", "failures", "first_fail", "retry_at", "rules"), pipe.PTTL(ctx, key), pipe.Time(ctx)}
}

// decode reads an entry from its HMGET, PTTL and TIME; found as load says.
func (r *Robots) decode(rd reads, host string) (robotsEntry, bool) {
	h, pt, tm := rd.h, rd.pt, rd.tm
	v := h.Val()
	if len(v) != 6 || v[0] == nil {
		return robotsEntry{}, false
	}
	num := func(x any) int64 { n, _ := strconv.ParseInt(fmt.Sprint(x), 10, 64); return n }
	status := int(num(v[0]))
	if !unavailable(status) {
		ttl := max(pt.Val(), time.Second)
		if rules, ok := v[5].(string); ok {
			return robotsEntry{data: fromCompact(r.agent, []byte(rules)), ttl: ttl}, true
		}
		body, _ := v[1].(string) // stored whole by an earlier RedCrawl
		return robotsEntry{data: r.parse(status, []byte(body)).For(r.agent), ttl: ttl}, true
	}
	now := tm.Val().UnixMilli()
	retryAt := num(v[4])
	if now >= retryAt {
		return robotsEntry{}, false // due: this caller tries again
	}
	return robotsEntry{ttl: time.Duration(retryAt-now) * time.Millisecond, unavail: &UnavailableError{Host: host,
		Status: status, Failures: int(num(v[2])), Since: time.Duration(now-num(v[3])) * time.Millisecond,
		Retry: time.Duration(retryAt-now) * time.Millisecond}}, true
}

// parse turns an answer into rules (RobotsFromStatus).
func (r *Robots) parse(status int, body []byte) *RobotsTxt { return RobotsFromStatus(status, body) }
