package politeness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/temoto/robotstxt"
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

// Robots answers "may we fetch this URL?" for a whole crawl cluster: each
// host's robots.txt is fetched once per TTL by one worker (under a short
// Redis lock), and kept in Redis for every worker, and in a small local
// cache per process. RFC 9309: 2xx is obeyed, 4xx allows all, 5xx or no
// answer disallows all until ErrorTTL, then it is fetched again (never
// "deny forever", never "allow on error").
type Robots struct {
	c        redis.UniversalClient
	prefix   string // key = prefix + "{" + host + "}": the host is the hash tag
	agent    string // product token matched against User-agent lines
	fetch    RobotsFetcher
	TTL      time.Duration // how long a 2xx/4xx answer is kept (24 h)
	ErrorTTL time.Duration // how long a 5xx/unreachable answer is kept (5 min)
	MaxLocal int           // hosts kept in the local cache (10 000)
	LockTTL  time.Duration // how long one worker may take to fetch (15 s)
	WaitFor  time.Duration // how long to wait for another worker's fetch (3 s)
	mu       sync.Mutex
	local    map[string]robotsEntry
	// flight makes concurrent checks of one host in this process share one
	// Redis lookup (measured: a worker's 8 loops starting on the same host
	// made 8 lookups, 8 lock attempts and their retries, and opened as many
	// connections).
	flight    singleflight.Group
	now       func() time.Time
	lockDelay time.Duration
}

type robotsEntry struct {
	data    *robotstxt.RobotsData
	expires time.Time
}

// NewRobots returns the robots cache of one crawl. keyPrefix is e.g.
// "crawl:NAME:robots:"; agent is the crawler's product token ("RedCrawl").
func NewRobots(c redis.UniversalClient, keyPrefix, agent string, fetch RobotsFetcher) *Robots {
	return &Robots{c: c, prefix: keyPrefix, agent: agent, fetch: fetch,
		TTL: 24 * time.Hour, ErrorTTL: 5 * time.Minute, MaxLocal: 10000, LockTTL: 15 * time.Second,
		WaitFor: 3 * time.Second, local: map[string]robotsEntry{}, now: time.Now, lockDelay: 100 * time.Millisecond}
}

// Verdict is the answer for one URL.
type Verdict struct {
	Allowed    bool
	CrawlDelay time.Duration // the host's Crawl-delay for our agent, 0 if none
}

// Key is the Redis key holding host's robots.txt.
func (r *Robots) Key(host string) string { return r.prefix + "{" + host + "}" }

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
	// TestAgent, not FindGroup(...).Test: only the former knows the
	// allow-all / disallow-all that a 4xx / 5xx answer stands for.
	v := Verdict{Allowed: d.TestAgent(path, r.agent)}
	if g := d.FindGroup(r.agent); g != nil {
		v.CrawlDelay = g.CrawlDelay
	}
	return v, nil
}

func (r *Robots) rules(ctx context.Context, u *url.URL) (*robotstxt.RobotsData, error) {
	host := u.Host
	r.mu.Lock()
	e, ok := r.local[host]
	r.mu.Unlock()
	if ok && r.now().Before(e.expires) {
		return e.data, nil
	}
	v, err, _ := r.flight.Do(host, func() (any, error) { return r.shared(ctx, u) })
	if err != nil {
		return nil, err
	}
	return v.(*robotstxt.RobotsData), nil
}

// shared finds the rules in Redis, or fetches them under the cluster-wide
// lock, and remembers them locally.
func (r *Robots) shared(ctx context.Context, u *url.URL) (*robotstxt.RobotsData, error) {
	host := u.Host
	key := r.Key(host)
	deadline := r.now().Add(r.WaitFor)
	for {
		g, ttl, found, err := r.load(ctx, key)
		if err != nil {
			return nil, err
		}
		if found {
			r.remember(host, g, ttl)
			return g, nil
		}
		token, got, err := r.lock(ctx, key)
		if err != nil {
			return nil, err
		}
		if got {
			// Look again under the lock: the previous holder may have stored
			// the answer between our read and our lock.
			g, ttl, found, err := r.load(ctx, key)
			if err == nil && !found {
				g, ttl, err = r.fetchAndStore(ctx, u.Scheme+"://"+host+"/robots.txt", key)
			}
			r.unlock(ctx, key, token)
			if err != nil {
				return nil, err
			}
			r.remember(host, g, ttl)
			return g, nil
		}
		if !r.now().Before(deadline) {
			return nil, ErrRobotsPending
		}
		t := time.NewTimer(r.lockDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func (r *Robots) remember(host string, g *robotstxt.RobotsData, ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.local) >= r.MaxLocal {
		for h := range r.local { // evict an arbitrary host: bounded memory, not an LRU
			delete(r.local, h)
			break
		}
	}
	r.local[host] = robotsEntry{data: g, expires: r.now().Add(ttl)}
}

// load reads the cached answer and how long it stays valid.
func (r *Robots) load(ctx context.Context, key string) (*robotstxt.RobotsData, time.Duration, bool, error) {
	pipe := r.c.Pipeline()
	h := pipe.HMGet(ctx, key, "status", "body")
	pt := pipe.PTTL(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, false, fmt.Errorf("politeness: robots %s: %w", key, err)
	}
	v := h.Val()
	if len(v) != 2 || v[0] == nil {
		return nil, 0, false, nil
	}
	status, _ := strconv.Atoi(fmt.Sprint(v[0]))
	body, _ := v[1].(string)
	return r.parse(status, []byte(body)), max(pt.Val(), time.Second), true, nil
}

// parse turns a status and body into rules. Status 0 stands for "no
// answer" and, like 5xx, disallows everything.
func (r *Robots) parse(status int, body []byte) *robotstxt.RobotsData {
	if status == 0 {
		status = 503
	}
	data, err := robotstxt.FromStatusAndBytes(status, body)
	if err != nil { // unexpected status (1xx, 3xx after the redirect budget): disallow for now
		data, _ = robotstxt.FromStatusAndBytes(503, nil)
	}
	return data
}

const maxRobotsBody = 500 << 10 // RFC 9309 asks parsers to read at least 500 KiB

func (r *Robots) fetchAndStore(ctx context.Context, robotsURL, key string) (*robotstxt.RobotsData, time.Duration, error) {
	status, body, err := r.fetchFollowing(ctx, robotsURL)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		status, body = 0, nil // unreachable: disallow all, retry after ErrorTTL
	}
	if len(body) > maxRobotsBody {
		body = body[:maxRobotsBody]
	}
	ttl := r.TTL
	if status == 0 || status >= 500 {
		ttl = r.ErrorTTL
	}
	pipe := r.c.TxPipeline()
	pipe.HSet(ctx, key, "status", status, "body", body)
	pipe.PExpire(ctx, key, ttl)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, 0, fmt.Errorf("politeness: robots %s: %w", key, err)
	}
	return r.parse(status, body), ttl, nil
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

var unlockScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

func (r *Robots) lock(ctx context.Context, key string) (string, bool, error) {
	var b [16]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	ok, err := r.c.SetNX(ctx, key+":lock", token, r.LockTTL).Result()
	if err != nil {
		return "", false, fmt.Errorf("politeness: robots lock %s: %w", key, err)
	}
	return token, ok, nil
}

func (r *Robots) unlock(ctx context.Context, key, token string) {
	unlockScript.Run(context.WithoutCancel(ctx), r.c, []string{key + ":lock"}, token)
}
