package politeness_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/politeness"
)

func httpFetcher(ctx context.Context, u string) (politeness.RobotsResponse, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return politeness.RobotsResponse{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	res := politeness.RobotsResponse{Status: resp.StatusCode, Body: body}
	if loc, err := resp.Location(); err == nil {
		res.Location = loc.String()
	}
	return res, nil
}

func robotsServer(t *testing.T, hits *atomic.Int64) *url.URL {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			hits.Add(1)
			http.Redirect(w, r, "/real-robots.txt", http.StatusMovedPermanently)
			return
		}
		w.Write([]byte("User-agent: *\nDisallow: /\n\nUser-agent: RedCrawl\nDisallow: /private/\nCrawl-delay: 2\n"))
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

func TestRobotsObeyedAndFetchedOncePerCluster(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		var hits atomic.Int64
		base := robotsServer(t, &hits)
		// Ten workers (separate caches, as separate processes) ask at once.
		var wg sync.WaitGroup
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := politeness.NewRobots(s.Client, "crawl:t:robots:", "RedCrawl", httpFetcher)
				for path, want := range map[string]bool{"/private/a": false, "/public": true, "/": true} {
					v, err := r.Check(ctx, base.JoinPath(path))
					if err != nil {
						t.Error(err)
						return
					}
					if v.Allowed != want || v.CrawlDelay != 2*time.Second {
						t.Errorf("%s: %+v, want allowed=%v with Crawl-delay 2s", path, v, want)
					}
				}
			}()
		}
		wg.Wait()
		if n := hits.Load(); n != 1 {
			t.Fatalf("robots.txt fetched %d times by 10 workers, want once", n)
		}
		if ttl := s.Client.PTTL(ctx, "crawl:t:robots:{http://"+base.Host+"}").Val(); ttl < 23*time.Hour {
			t.Fatalf("robots cache TTL %v, want about 24h", ttl)
		}
		// An eleventh finds the answer stored, in one round trip, and
		// takes no lock: the lock is for the one that fetches.
		c := s.NewClient(t)
		rt := redistest.RoundTrips(c)
		r := politeness.NewRobots(c, "crawl:t:robots:", "RedCrawl", httpFetcher)
		var other atomic.Int64 // another host first: the connection made, the scripts loaded
		if _, err := r.Check(ctx, robotsServer(t, &other).JoinPath("/public")); err != nil {
			t.Fatal(err)
		}
		rt.Store(0)
		if _, err := r.Check(ctx, base.JoinPath("/public")); err != nil {
			t.Fatal(err)
		}
		if n := rt.Load(); n != 1 {
			t.Fatalf("a stored answer took %d round trips, want 1", n)
		}
		if n := s.Client.Exists(ctx, "crawl:t:robots:{http://"+base.Host+"}:lock").Val(); n != 0 || hits.Load() != 1 {
			t.Fatalf("after a stored answer was read: lock exists %d, fetches %d; want no lock, one fetch", n, hits.Load())
		}
	})
}

func TestRobotsStatusRules(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		for _, tc := range []struct {
			name  string
			res   politeness.RobotsResponse
			err   error
			avail bool // an answer: obeyed (allows all here), cached for TTL
		}{
			{"404 allows all", politeness.RobotsResponse{Status: 404}, nil, true},
			{"403 allows all", politeness.RobotsResponse{Status: 403}, nil, true},
			{"503 is unavailable", politeness.RobotsResponse{Status: 503}, nil, false},
			{"429 is unavailable", politeness.RobotsResponse{Status: 429}, nil, false},
			{"no answer is unavailable", politeness.RobotsResponse{}, errors.New("connection refused"), false},
		} {
			fetch := func(context.Context, string) (politeness.RobotsResponse, error) { return tc.res, tc.err }
			r := politeness.NewRobots(s.Client, "crawl:"+tc.name+":robots:", "RedCrawl", fetch)
			u, _ := url.Parse("http://h.test/page")
			v, err := r.Check(ctx, u)
			var un *politeness.UnavailableError
			switch {
			case tc.avail && (err != nil || !v.Allowed):
				t.Errorf("%s: %+v, %v; want allowed", tc.name, v, err)
			case !tc.avail && (!errors.As(err, &un) || !errors.Is(err, politeness.ErrRobotsUnavailable) ||
				un.Failures != 1 || un.Retry > r.Backoff || un.Retry < r.Backoff/2 || un.Status != tc.res.Status):
				t.Errorf("%s: %+v, %v; want an UnavailableError: 1 failure, next try in %v", tc.name, v, err, r.Backoff)
			}
			if ttl := s.Client.PTTL(ctx, r.Key("http", "h.test")).Val(); tc.avail && ttl < 23*time.Hour {
				t.Errorf("%s: cached for %v; want about 24h", tc.name, ttl)
			}
		}
	})
}

// An unavailable robots.txt is tried again by one worker when the shared
// back-off ends (which doubles with each failure in a row), and the first
// answer ends it. Time passing is simulated by moving retry_at.
func TestRobotsUnavailableBacksOffForAllWorkers(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		var calls atomic.Int64
		answers := []politeness.RobotsResponse{{Status: 503}, {}, {Status: 200, Body: []byte("User-agent: *\nDisallow: /x\n")}}
		fetch := func(context.Context, string) (politeness.RobotsResponse, error) {
			n := calls.Add(1)
			if n == 2 {
				return politeness.RobotsResponse{}, errors.New("connection refused")
			}
			return answers[min(n, 3)-1], nil
		}
		worker := func() *politeness.Robots { // a process of its own: an empty local cache
			r := politeness.NewRobots(s.Client, "crawl:b:robots:", "RedCrawl", fetch)
			r.Backoff, r.MaxBackoff = time.Hour, 3*time.Hour
			return r
		}
		u, _ := url.Parse("http://h.test/page")
		check := func(wantFailures int, wantRetry time.Duration) {
			t.Helper()
			_, err := worker().Check(ctx, u)
			var un *politeness.UnavailableError
			if !errors.As(err, &un) || un.Failures != wantFailures || un.Retry > wantRetry || un.Retry < wantRetry-time.Minute {
				t.Fatalf("Check: %v; want %d failures, next try in %v", err, wantFailures, wantRetry)
			}
		}
		key := worker().Key("http", "h.test")
		due := func() { s.Client.HSet(ctx, key, "retry_at", 0) }

		check(1, time.Hour) // 503: fetched once
		check(1, time.Hour) // another worker waits the same hour, without a fetch
		if calls.Load() != 1 {
			t.Fatalf("%d fetches; the back-off is not shared", calls.Load())
		}
		due()
		check(2, 2*time.Hour) // no answer: the back-off doubles
		due()
		v, err := worker().Check(ctx, u) // the answer comes: obeyed, the failures forgotten
		if err != nil || !v.Allowed || calls.Load() != 3 {
			t.Fatalf("after recovery: %+v, %v, %d fetches", v, err, calls.Load())
		}
		if v, err := worker().Check(ctx, u.JoinPath("../x")); err != nil || v.Allowed {
			t.Fatalf("the recovered robots.txt is not obeyed: %+v, %v", v, err)
		}
		if n, err := s.Client.HExists(ctx, key, "failures").Result(); err != nil || n {
			t.Fatalf("the failure history outlived the answer (%v)", err)
		}
	})
}

// Within one process, loops asking about the same host at once share one
// lookup: one fetch and a handful of Redis round trips, not one set each.
func TestRobotsConcurrentChecksInOneProcessShareALookup(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		var hits atomic.Int64
		base := robotsServer(t, &hits)
		c := s.NewClient(t)
		rt := redistest.RoundTrips(c)
		r := politeness.NewRobots(c, "crawl:t:robots:", "RedCrawl", httpFetcher)
		// Another host first: the connection is made and the scripts are
		// loaded, so that what is counted is the lookup alone.
		var other atomic.Int64
		if _, err := r.Check(ctx, robotsServer(t, &other).JoinPath("/public")); err != nil {
			t.Fatal(err)
		}
		rt.Store(0)
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if v, err := r.Check(ctx, base.JoinPath("/public")); err != nil || !v.Allowed {
					t.Errorf("Check = %+v, %v", v, err)
				}
			}()
		}
		wg.Wait()
		if n := hits.Load(); n != 1 {
			t.Fatalf("robots.txt fetched %d times", n)
		}
		// One lookup is a load, the lock with a load again under it, and
		// the store that releases the lock: 3 round trips (5 before the
		// lock and the store took their loads and the unlock along); a
		// loop arriving after it finds the answer in the process. The
		// loops each on their own made 75-115.
		if n := rt.Load(); n != 3 {
			t.Fatalf("16 concurrent checks made %d Redis round trips, want the lookup's 3", n)
		}
		lock := r.Key(base.Scheme, base.Host) + ":lock"
		if n, err := s.Client.Exists(ctx, lock).Result(); err != nil || n != 0 {
			t.Fatalf("the fetching worker's lock %s outlived the store (%d, %v)", lock, n, err)
		}
	})
}

// A robots.txt longer than the 500 KiB read drops the line the limit cut:
// cut short, "Allow: /abc/public" was read as "Allow: /abc", which
// allowed /abc/secret.
func TestRobotsLineCutAtTheLimitIsDropped(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		head := "User-agent: *\nDisallow: /abc\n"
		pad := strings.Repeat("# padding padding padding padding padding padding\n", (500<<10)/50)
		body := head + pad
		body = body[:500<<10-len("Allow: /abc")] + "\nAllow: /abc/public\n" // the limit falls inside the Allow line
		fetch := func(context.Context, string) (politeness.RobotsResponse, error) {
			return politeness.RobotsResponse{Status: 200, Body: []byte(body)}, nil
		}
		r := politeness.NewRobots(s.Client, "crawl:cut:robots:", "RedCrawl", fetch)
		for path, want := range map[string]bool{"/abc/secret": false, "/other": true} {
			u, _ := url.Parse("http://h.test" + path)
			v, err := r.Check(context.Background(), u)
			if err != nil || v.Allowed != want {
				t.Errorf("%s: %+v, %v; want allowed %v", path, v, err, want)
			}
		}
	})
}

// A robots.txt answers for its scheme, host and port (RFC 9309 §2.3):
// https://h/ URLs obey https://h/robots.txt, not http://h/robots.txt.
func TestRobotsAreScopedToTheirScheme(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		var asked sync.Map
		fetch := func(_ context.Context, u string) (politeness.RobotsResponse, error) {
			asked.Store(u, true)
			if strings.HasPrefix(u, "https://") {
				return politeness.RobotsResponse{Status: 200, Body: []byte("User-agent: *\nDisallow: /\n")}, nil
			}
			return politeness.RobotsResponse{Status: 200, Body: []byte("User-agent: *\nAllow: /\n")}, nil
		}
		r := politeness.NewRobots(s.Client, "crawl:scheme:robots:", "RedCrawl", fetch)
		for raw, want := range map[string]bool{"http://h.test/page": true, "https://h.test/page": false} {
			u, _ := url.Parse(raw)
			if v, err := r.Check(context.Background(), u); err != nil || v.Allowed != want {
				t.Errorf("%s: %+v, %v; want allowed %v", raw, v, err, want)
			}
		}
		for _, u := range []string{"http://h.test/robots.txt", "https://h.test/robots.txt"} {
			if _, ok := asked.Load(u); !ok {
				t.Errorf("%s was never fetched", u)
			}
		}
	})
}

// A fetch slower than the lock: the lock ran out and another worker holds
// it now. The store keeps the answer and leaves the other's lock alone,
// for the store releases only its own (and in the same call). The same
// for an unavailable robots.txt, whose back-off is stored instead.
func TestRobotsStoreReleasesOnlyItsOwnLock(t *testing.T) {
	for _, status := range []int{200, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			redistest.Both(t, func(t *testing.T, s *redistest.Server) {
				ctx := context.Background()
				u, _ := url.Parse("http://slow.example/page")
				var r *politeness.Robots
				fetch := func(ctx context.Context, _ string) (politeness.RobotsResponse, error) {
					// Meanwhile this worker's lock expired and another took it.
					lock := r.Key(u.Scheme, u.Host) + ":lock"
					if mine, err := s.Client.Get(ctx, lock).Result(); err != nil || mine == "" {
						t.Errorf("no lock held during the fetch (%v)", err)
					}
					s.Client.Set(ctx, lock, "another worker", 0)
					return politeness.RobotsResponse{Status: status, Body: []byte("User-agent: *\nDisallow: /private\n")}, nil
				}
				r = politeness.NewRobots(s.Client, "crawl:t:robots:", "RedCrawl", fetch)
				_, err := r.Check(ctx, u)
				if status == 200 && err != nil || status == 503 && !errors.Is(err, politeness.ErrRobotsUnavailable) {
					t.Fatalf("Check: %v", err)
				}
				key := r.Key(u.Scheme, u.Host)
				if got, _ := s.Client.HGet(ctx, key, "status").Result(); got != fmt.Sprint(status) {
					t.Fatalf("stored status %q; want %d", got, status)
				}
				if got, _ := s.Client.Get(ctx, key+":lock").Result(); got != "another worker" {
					t.Fatalf("the other worker's lock is %q; the store must leave it", got)
				}
			})
		})
	}
}

// A crawl of many hosts with large robots.txt files holds a bounded
// amount of them: Redis keeps each host's rules for the crawl's agent,
// not the file (a file written for other crawlers leaves a few bytes),
// and a worker's local cache stays within its bytes however large each
// host's rules are. Every answer stays right: an origin the cache let go
// is read from Redis again. Before, 1 000 hosts of 500 KiB took a worker
// to 2 GB and Redis 500 MB.
func TestRobotsMemoryIsBoundedInBytes(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		others := func(host string) []byte { // 490 KiB for other crawlers, two lines for ours (within the 500 KiB read)
			var b strings.Builder
			for i := 0; b.Len() < 490<<10; i++ {
				fmt.Fprintf(&b, "User-agent: bot%d\nDisallow: /%d/\n\n", i, i)
			}
			fmt.Fprintf(&b, "User-agent: RedCrawl\nDisallow: /%s-private/\n", host)
			return []byte(b.String())
		}
		ours := func(host string) []byte { // 500 KiB of rules for every crawler
			var b strings.Builder
			b.WriteString("User-agent: *\n")
			for i := 0; b.Len() < 500<<10; i++ {
				fmt.Fprintf(&b, "Disallow: /%s/%d/\n", host, i)
			}
			return []byte(b.String())
		}
		for name, body := range map[string]func(string) []byte{"others": others, "ours": ours} {
			var fetched atomic.Int64
			fetch := func(_ context.Context, u string) (politeness.RobotsResponse, error) {
				fetched.Add(1)
				pu, _ := url.Parse(u)
				return politeness.RobotsResponse{Status: 200, Body: body(pu.Hostname())}, nil
			}
			r := politeness.NewRobots(s.Client, "crawl:m:"+name+":", "RedCrawl", fetch)
			r.MaxLocalBytes = 2 << 20
			const hosts = 40
			check := func(round int) {
				for i := 0; i < hosts; i++ {
					host := fmt.Sprintf("h%d.example", i)
					blocked := "/" + host + "-private/x"
					if name == "ours" {
						blocked = "/" + host + "/7/x"
					}
					for path, want := range map[string]bool{blocked: false, "/open": true} {
						v, err := r.Check(ctx, &url.URL{Scheme: "http", Host: host, Path: path})
						if err != nil || v.Allowed != want {
							t.Fatalf("%s, round %d, %s%s: %+v %v; want allowed %v", name, round, host, path, v, err, want)
						}
					}
					if r.LocalBytes() > r.MaxLocalBytes {
						t.Fatalf("%s: the local cache holds %d bytes; its bound is %d", name, r.LocalBytes(), r.MaxLocalBytes)
					}
				}
			}
			check(1)
			check(2) // evicted origins come back from Redis, not from the hosts
			if n := fetched.Load(); n != hosts {
				t.Fatalf("%s: %d robots.txt fetched for %d hosts; want one each", name, n, hosts)
			}
			key := "crawl:m:" + name + ":{http://h0.example}"
			if s.Client.HExists(ctx, key, "body").Val() {
				t.Fatalf("%s: Redis keeps the file", name)
			}
			if n := s.Client.HStrLen(ctx, key, "rules").Val(); name == "others" && n > 64 {
				t.Fatalf("a file written for other crawlers left %d bytes of rules in Redis", n)
			}
		}
	})
}
