package leader_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redcrawl/crawler/fence"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// pausable wraps a client; while paused, every call hangs until its context
// ends, as it would for a process stopped by SIGSTOP or cut off by a partition.
type pausable struct {
	redis.Scripter
	mu     sync.Mutex
	paused chan struct{} // non-nil while paused; closed on resume
}

func (p *pausable) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = make(chan struct{})
}

func (p *pausable) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.paused)
	p.paused = nil
}

func (p *pausable) gate(ctx context.Context) error {
	p.mu.Lock()
	ch := p.paused
	p.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pausable) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if err := p.gate(ctx); err != nil {
		c := redis.NewCmd(ctx)
		c.SetErr(err)
		return c
	}
	return p.Scripter.EvalSha(ctx, sha, keys, args...)
}

func (p *pausable) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	if err := p.gate(ctx); err != nil {
		c := redis.NewCmd(ctx)
		c.SetErr(err)
		return c
	}
	return p.Scripter.Eval(ctx, src, keys, args...)
}

const writeBody = `redis.call('SET', KEYS[2], ARGV[2]) return 1`

var fencedWrite = fence.NewScript("leader/test-write", writeBody)

// The election runs on a fake clock (clock_test.go): the steps below take
// milliseconds, while the lock's TTL on the server is a real 10 s.

// A leader whose calls hang (SIGSTOP, a partition) stops acting at its
// local deadline, while its lock is still alive on the server; once the
// lock expires another takes over with a higher epoch, and the old one's
// late release and fenced write are refused.
func TestPausedLeaderStepsDownIsReplacedAndFenced(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		ctx := ctxFor(t, 30*time.Second)
		const key = "t:{elect}:leader"
		clock := newFakeClock()
		cfg := leader.DefaultConfig()
		cfg.Clock = clock

		pa := &pausable{Scripter: s.Client}
		ea := newElector(t, pa, key, "a", cfg)
		la, err := ea.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clock.awaitWaits(t, 1) // the renewal loop waits for its first tick
		if _, err := fencedWrite.Run(ctx, s.Client, leader.EpochKey(key), la.Epoch(), []string{"t:{elect}:data"}, "from a"); err != nil {
			t.Fatalf("leader's own fenced write: %v", err)
		}

		pa.pause() // a's calls hang from now on
		clock.Advance(cfg.RenewInterval)
		clock.awaitWaits(t, 1) // the renewal is sent, and hangs
		clock.Advance(cfg.TTL) // past the local deadline
		<-la.Done()
		// The moment a stepped down, its lock must still be alive on the server:
		// it stopped acting before the TTL ran out, not after.
		info, _, err := leader.Current(ctx, s.Client, key)
		if err != nil || info.ID != "a" || info.TTL <= 0 {
			t.Fatalf("when a stepped down the server showed %+v, %v; want a's lock still alive", info, err)
		}
		if !errors.Is(la.Err(), leader.ErrLockLost) {
			t.Fatalf("a's leadership ended with %v, want ErrLockLost", la.Err())
		}

		expire(t, s.Client, key) // the server's TTL runs out
		eb := newElector(t, s.Client, key, "b", leader.DefaultConfig())
		lb, err := eb.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer lb.Resign(context.Background())
		if lb.Epoch() <= la.Epoch() {
			t.Fatalf("new epoch %d not above old %d", lb.Epoch(), la.Epoch())
		}

		// a wakes up late and tries to act: its release must not free b's
		// lock, and its fenced write must be refused.
		pa.resume()
		lockA, err := leader.Obtain(ctx, pa, key, "a", time.Second) // a cannot even re-take it
		if !errors.Is(err, leader.ErrNotObtained) {
			t.Fatalf("Obtain while b leads: %v %v", lockA, err)
		}
		if err := la.Resign(ctx); err != nil {
			t.Fatalf("late resign: %v", err)
		}
		if info, _, err := leader.Current(ctx, s.Client, key); err != nil || info.ID != "b" {
			t.Fatalf("after a's late resign the lock is %+v, %v; want b's", info, err)
		}
		_, err = fencedWrite.Run(ctx, s.Client, leader.EpochKey(key), la.Epoch(), []string{"t:{elect}:data"}, "late write from a")
		if !errors.Is(err, fence.ErrFenced) {
			t.Fatalf("stale leader's write: got %v, want ErrFenced", err)
		}
		if _, err := fencedWrite.Run(ctx, s.Client, leader.EpochKey(key), lb.Epoch(), []string{"t:{elect}:data"}, "from b"); err != nil {
			t.Fatalf("current leader's write: %v", err)
		}
		if v := s.Client.Get(ctx, "t:{elect}:data").Val(); v != "from b" {
			t.Fatalf("data = %q, want %q", v, "from b")
		}
	})
}

// Renewals keep a leader leading across twice its TTL, under one epoch.
func TestLeaderKeepsLeadingWhileRenewing(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := ctxFor(t, 20*time.Second)
		clock := newFakeClock()
		cfg := leader.DefaultConfig()
		cfg.Clock = clock
		e := newElector(t, s.Client, "t:{renew}:leader", "a", cfg)
		l, err := e.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clock.awaitWaits(t, 1)
		for i := 0; i < 6; i++ { // six renewal intervals: twice the TTL
			clock.Advance(cfg.RenewInterval)
			clock.awaitWaits(t, 2) // a wait while the renewal is out, one after its answer
			if l.Err() != nil {
				t.Fatalf("leadership lost after %d renewals with Redis healthy: %v", i, l.Err())
			}
		}
		info, _, err := leader.Current(ctx, s.Client, "t:{renew}:leader")
		if err != nil || info.ID != "a" || info.Epoch != l.Epoch() {
			t.Fatalf("after renewals the lock is %+v, %v; want a's at epoch %d", info, err, l.Epoch())
		}
		if err := l.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(l.Err(), leader.ErrResigned) {
			t.Fatalf("Err after Resign = %v", l.Err())
		}
		if _, _, err := leader.Current(ctx, s.Client, "t:{renew}:leader"); !errors.Is(err, leader.ErrNoLeader) {
			t.Fatalf("after Resign: %v; want no leader", err)
		}
	})
}

// With Redis gone, the leader steps down at its local deadline, naming the
// renewal error, and campaigning, reading and resigning report errors.
func TestRedisUnreachable(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := ctxFor(t, 30*time.Second)
		clock := newFakeClock()
		cfg := leader.DefaultConfig()
		cfg.Clock = clock
		c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1}) // fail fast once down
		defer c.Close()
		e := newElector(t, c, "t:{down}:leader", "a", cfg)
		l, err := e.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clock.awaitWaits(t, 1)
		s.Stop()
		clock.Advance(cfg.RenewInterval)
		clock.awaitWaits(t, 2) // the renewal fails, and the loop waits on
		clock.Advance(cfg.TTL)
		<-l.Done()
		if !errors.Is(l.Err(), leader.ErrLockLost) || !strings.Contains(l.Err().Error(), "last renewal error") {
			t.Fatalf("leadership ended with %q; want ErrLockLost naming the renewal error", l.Err())
		}
		_, err = e.Campaign(ctx)
		if err == nil || errors.Is(err, leader.ErrNotObtained) || !strings.HasPrefix(err.Error(), "leader: campaign:") {
			t.Fatalf("Campaign with Redis down: %v; want a leader: campaign: connection error", err)
		}
		if _, err := e.Leader(ctx); err == nil || errors.Is(err, leader.ErrNoLeader) {
			t.Fatalf("Leader with Redis down: %v; want a connection error", err)
		}
		if err := l.Resign(ctx); err == nil {
			t.Fatal("Resign with Redis down reported success")
		}
	})
}

func TestConfigValidate(t *testing.T) {
	good := leader.DefaultConfig()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*leader.Config){
		"tiny TTL":          func(c *leader.Config) { c.TTL = time.Millisecond },
		"margin over TTL/2": func(c *leader.Config) { c.SafetyMargin = c.TTL / 2 },
		"no margin":         func(c *leader.Config) { c.SafetyMargin = 0 },
		"renew too slow":    func(c *leader.Config) { c.RenewInterval = c.TTL / 2 },
		"no retry":          func(c *leader.Config) { c.RetryInterval = 0 },
	} {
		c := good
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: Validate accepted %+v", name, c)
		}
	}
}

// Failover: candidates in separate processes; the leader is killed with
// SIGKILL (no chance to resign) and a survivor takes over within TTL plus one
// retry interval, under a strictly higher epoch, one leader at a time.
func TestFailoverAfterSIGKILL(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		s.FollowWallClock(t)
		const ttl, retry = time.Second, 100 * time.Millisecond
		type event struct {
			pid   int
			epoch int64
			at    time.Time
		}
		events := make(chan event, 16)
		procs := map[int]*os.Process{}
		for i := 0; i < 3; i++ {
			cmd, out := startHelper(t, "candidate", "LEADER_TEST_REDIS="+s.URL(),
				"LEADER_TEST_TTL_MS="+strconv.Itoa(int(ttl/time.Millisecond)),
				"LEADER_TEST_RETRY_MS="+strconv.Itoa(int(retry/time.Millisecond)))
			procs[cmd.Process.Pid] = cmd.Process
			go func(pid int) {
				for {
					var epoch int64
					if _, err := fmt.Fscanf(out, "LEADER %d\n", &epoch); err != nil {
						return
					}
					events <- event{pid, epoch, time.Now()}
				}
			}(cmd.Process.Pid)
		}
		next := func() event {
			select {
			case ev := <-events:
				return ev
			case <-time.After(30 * time.Second):
				t.Fatal("no leader elected within 30s")
				return event{}
			}
		}
		prev := next()
		for round := 0; round < 2; round++ {
			killed := time.Now()
			procs[prev.pid].Signal(syscall.SIGKILL)
			ev := next()
			if ev.pid == prev.pid {
				t.Fatalf("killed process %d reported leadership again", ev.pid)
			}
			if ev.epoch <= prev.epoch {
				t.Fatalf("epoch went from %d to %d", prev.epoch, ev.epoch)
			}
			// The lock can outlive the kill by at most TTL; a follower retries
			// every RetryInterval. The slack covers process scheduling only.
			if took, limit := ev.at.Sub(killed), ttl+retry+300*time.Millisecond; took > limit {
				t.Errorf("failover took %v, want at most TTL+retry (%v) plus slack", took, limit)
			}
			prev = ev
		}
		select {
		case ev := <-events:
			t.Fatalf("a second leader appeared while %d leads: %+v", prev.pid, ev)
		default:
		}
	})
}

func runCandidate() int {
	c := helperClient()
	defer c.Close()
	cfg := leader.ConfigForTTL(time.Duration(envInt("LEADER_TEST_TTL_MS")) * time.Millisecond)
	cfg.RetryInterval = time.Duration(envInt("LEADER_TEST_RETRY_MS")) * time.Millisecond
	e, err := leader.NewElector(c, "t:{failover}:leader", strconv.Itoa(os.Getpid()), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		l, err := e.Campaign(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "candidate:", err)
			return 1
		}
		fmt.Printf("LEADER %d\n", l.Epoch())
		select {
		case <-l.Done():
		case <-ctx.Done():
		}
	}
	return 0
}

func newElector(t *testing.T, c redis.Scripter, key, id string, cfg leader.Config) *leader.Elector {
	t.Helper()
	e, err := leader.NewElector(c, key, id, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
