package politeness

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// holdFirst is a hook that holds the client's first pipeline until
// release is closed, and counts pipelines (not a connection's set-up).
type holdFirst struct {
	mu      sync.Mutex
	n       int
	started chan struct{}
	release chan struct{}
}

func (h *holdFirst) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *holdFirst) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *holdFirst) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if name := cmds[0].Name(); name == "hello" || name == "client" || name == "auth" {
			return next(ctx, cmds) // a new connection's set-up
		}
		h.mu.Lock()
		h.n++
		first := h.n == 1
		h.mu.Unlock()
		if first {
			close(h.started)
			<-h.release
		}
		return next(ctx, cmds)
	}
}

// Requests made while a pipeline is in flight go together in the next
// one, each with its own results, a failing command failing only its own
// request.
func TestPipelinesGroupWhatWaits(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		c := s.NewClient(t)
		h := &holdFirst{started: make(chan struct{}), release: make(chan struct{})}
		c.AddHook(h)
		const n = 20
		if err := s.Client.Set(ctx, "str", "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			s.Client.HSet(ctx, fmt.Sprint("h", i), "f", i)
		}
		allQueued := make(chan struct{})
		p := &pipelines{c: c}
		p.queued = func(waiting int) {
			if waiting == n { // the held pipeline's request is no longer waiting
				close(allQueued)
			}
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the first: its pipeline is held
			defer wg.Done()
			var cmd *redis.StringCmd
			if err := p.do(ctx, func(pipe redis.Pipeliner) { cmd = pipe.Get(ctx, "str") }); err != nil || cmd.Val() != "x" {
				t.Errorf("first request: %q, %v", cmd.Val(), err)
			}
		}()
		<-h.started
		got := make([]string, n)
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var cmd *redis.StringCmd
				key := fmt.Sprint("h", i)
				if i == 7 {
					key = "str" // HGET of a string: WRONGTYPE, for this request alone
				}
				if err := p.do(ctx, func(pipe redis.Pipeliner) { cmd = pipe.HGet(ctx, key, "f") }); err != nil {
					errs[i] = err
					return
				}
				got[i], errs[i] = cmd.Result()
			}()
		}
		<-allQueued
		close(h.release)
		wg.Wait()
		h.mu.Lock()
		pipes := h.n
		h.mu.Unlock()
		if pipes != 2 {
			t.Fatalf("%d requests made while one pipeline was in flight went in %d pipelines in all, want 2", n, pipes)
		}
		for i := 0; i < n; i++ {
			if i == 7 {
				if errs[i] == nil {
					t.Errorf("request 7's HGET of a string succeeded: %q", got[i])
				}
				continue
			}
			if errs[i] != nil || got[i] != fmt.Sprint(i) {
				t.Errorf("request %d: %q, %v", i, got[i], errs[i])
			}
		}
	})
}

// A script Redis does not hold (its first run since Redis started) runs
// on its own, and loads it.
func TestPipelinesScriptNotLoaded(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		c := s.NewClient(t)
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		script := redis.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)
		p := &pipelines{c: c}
		for want := int64(2); want <= 4; want += 2 {
			if n, err := p.script(ctx, script, []string{"n"}, 2).Int64(); err != nil || n != want {
				t.Fatalf("script = %d, %v; want %d", n, err, want)
			}
		}
		if ok, err := c.ScriptExists(ctx, script.Hash()).Result(); err != nil || !ok[0] {
			t.Fatalf("the script is not loaded after its run: %v %v", ok, err)
		}
	})
}

// Warm reads the stored answers of a batch of URLs' origins in one round
// trip, and the checks that follow find them in the process.
func TestWarmReadsTogether(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		c := s.NewClient(t)
		h := &holdFirst{started: make(chan struct{}), release: make(chan struct{})}
		close(h.release) // nothing held: counted only
		c.AddHook(h)
		r := NewRobots(c, "crawl:t:robots:", "RedCrawl", func(context.Context, string) (RobotsResponse, error) {
			t.Error("a robots.txt stored in Redis was fetched")
			return RobotsResponse{}, fmt.Errorf("no fetch here")
		})
		const n = 20
		var urls []string
		for i := 0; i < n; i++ {
			host := fmt.Sprintf("h%d.test", i)
			key := r.Key("http", host)
			s.Client.HSet(ctx, key, "status", 200, "body", "User-agent: *\nDisallow: /private/\n")
			s.Client.PExpire(ctx, key, time.Hour)
			urls = append(urls, "http://"+host+"/private/page", "http://"+host+"/public") // two URLs an origin
		}
		r.Warm(ctx, urls)
		for i := 0; i < maxWarming; i++ { // every slot: the warm's is free once its read is kept
			r.warming <- struct{}{}
		}
		for i := 0; i < maxWarming; i++ {
			<-r.warming
		}
		for i, raw := range urls {
			u, _ := url.Parse(raw)
			v, err := r.Check(ctx, u)
			if err != nil || v.Allowed != (i%2 == 1) {
				t.Fatalf("Check(%s) = %+v, %v", raw, v, err)
			}
		}
		h.mu.Lock()
		pipes := h.n
		h.mu.Unlock()
		if pipes != 1 {
			t.Fatalf("warming %d origins and checking two URLs of each took %d round trips, want 1", n, pipes)
		}
		// An origin Redis has no answer for is left to its Check.
		r.Warm(ctx, []string{"http://new.test/a"})
		for i := 0; i < maxWarming; i++ {
			r.warming <- struct{}{}
		}
		if _, ok := r.cached("http://new.test"); ok {
			t.Fatal("Warm kept an answer for an origin Redis had none for")
		}
	})
}
