package politeness_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/politeness"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

func TestMain(m *testing.M) {
	if os.Getenv("POLITENESS_TEST_ROLE") == "hammer" {
		os.Exit(runHammer())
	}
	os.Exit(m.Run())
}

// The oracle: random sequences of (time step, n, call) decided by the Redis
// script and by golang.org/x/time/rate on the same virtual clock must agree
// on every decision, and on every delay to the microsecond. The script
// counts the bucket as GCRA's tat on Redis's clock, in µs; x/time/rate
// counts tokens, in float64: the same bucket, whose delays round apart by
// a nanosecond or so (9.3831 s against 9.383099999 s), and whose decisions
// can differ only where the tokens stand within a microsecond's refill of
// n, a tie neither rounding can call. Such a tie ends its sequence (the
// two have taken different tokens since); it must be rare.
func TestOracleAgainstXTimeRate(t *testing.T) {
	s := redistest.Mini(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	rates := []float64{0.1, 0.5, 1, 2, 3, 7.5, 10, 50, 333.3}
	const seqs, steps = 60, 80
	checked, ties := 0, 0
	for seq := 0; seq < seqs; seq++ {
		r := rates[rng.IntN(len(rates))]
		b := 1 + rng.IntN(6)
		key := fmt.Sprintf("t:{oracle}:%d", seq)
		lim := politeness.NewLimiter(s.Client, politeness.Limit(r), b)
		oracle := rate.NewLimiter(rate.Limit(r), b)
		now := time.Unix(1_700_000_000+int64(seq)*1000, 0)
	sequence:
		for step := 0; step < steps; step++ {
			// Steps in whole microseconds (Redis TIME's resolution), often
			// short, sometimes long enough to refill the bucket.
			switch rng.IntN(4) {
			case 0:
			case 1:
				now = now.Add(time.Duration(rng.IntN(2000)) * time.Microsecond)
			case 2:
				now = now.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
			case 3:
				now = now.Add(time.Duration(rng.IntN(5_000_000)) * time.Microsecond)
			}
			s.Mini.SetTime(now)
			n := 1 + rng.IntN(b)
			if rng.IntN(2) == 0 {
				margin := oracle.TokensAt(now) - float64(n)
				got, err := lim.AllowN(ctx, key, n)
				if err != nil {
					t.Fatal(err)
				}
				if want := oracle.AllowN(now, n); got != want {
					if math.Abs(margin) < r*1e-6 { // within a microsecond's refill of n
						ties++
						break sequence
					}
					t.Fatalf("seq %d step %d (r=%v b=%d n=%d): AllowN = %v, x/time/rate says %v (%.3g tokens to spare)",
						seq, step, r, b, n, got, want, margin)
				}
			} else {
				got, err := lim.ReserveN(ctx, key, n, -1)
				if err != nil {
					t.Fatal(err)
				}
				want := oracle.ReserveN(now, n)
				if d := got.Delay - want.DelayFrom(now); got.OK != want.OK() || d <= -time.Microsecond || d >= time.Microsecond {
					t.Fatalf("seq %d step %d (r=%v b=%d n=%d): ReserveN = %+v, x/time/rate says ok=%v delay=%v",
						seq, step, r, b, n, got, want.OK(), want.DelayFrom(now))
				}
			}
			checked++
		}
	}
	t.Logf("%d decisions checked, %d ties", checked, ties)
	if checked < seqs*steps*9/10 {
		t.Fatalf("%d decisions of %d checked (%d ties ended their sequences): too few to say the buckets agree", checked, seqs*steps, ties)
	}
}

func TestBurstThenRefuseAndMaxWait(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		lim := politeness.NewLimiter(s.Client, 0.001, 3) // one token per 1000 s: no refill during the test
		for i := 0; i < 3; i++ {
			if ok, err := lim.Allow(ctx, "t:{b}:host"); !ok || err != nil {
				t.Fatalf("request %d of the burst refused: %v", i, err)
			}
		}
		if ok, err := lim.Allow(ctx, "t:{b}:host"); err != nil || ok {
			t.Fatal("fourth request within the burst of 3 allowed")
		}
		r, err := lim.ReserveN(ctx, "t:{b}:host", 1, time.Minute)
		if err != nil || r.OK || r.Delay < 999*time.Second || r.Delay > 1000*time.Second {
			t.Fatalf("ReserveN with a short maxWait = %+v, %v; want refused with a delay of about 1000s", r, err)
		}
		// The refused reservation changed nothing: a longer wait is still ~1000 s, not 2000 s.
		before := s.Client.Time(ctx).Val()
		r, err = lim.ReserveN(ctx, "t:{b}:host", 1, -1)
		after := s.Client.Time(ctx).Val()
		if err != nil || !r.OK || r.Delay > 1000*time.Second {
			t.Fatalf("ReserveN without bound = %+v, %v", r, err)
		}
		if r.At.Before(before) || r.At.After(after) { // the decision's time is Redis's
			t.Errorf("decided at %v; Redis's clock said %v before and %v after", r.At, before, after)
		}
		// Other keys are independent.
		if ok, err := lim.Allow(ctx, "t:{b}:other"); err != nil || !ok {
			t.Fatal("another host's bucket was affected")
		}
	})
}

func TestSpecialRatesAndErrors(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		if _, err := politeness.NewLimiter(s.Client, 1, 2).AllowN(ctx, "t:{e}:k", 3); !errors.Is(err, politeness.ErrExceedsBurst) {
			t.Fatalf("n > burst: %v, want ErrExceedsBurst", err)
		}
		zero := politeness.NewLimiter(s.Client, 0, 5)
		if ok, err := zero.Allow(ctx, "t:{e}:zero"); ok || err != nil {
			t.Fatalf("rate 0 allowed a request: %v %v", ok, err)
		}
		if err := zero.Wait(ctx, "t:{e}:zero"); !errors.Is(err, politeness.ErrZeroRate) {
			t.Fatalf("Wait at rate 0: %v", err)
		}
		inf := politeness.NewLimiter(s.Client, politeness.Inf, 1)
		for i := 0; i < 100; i++ {
			if ok, err := inf.AllowN(ctx, "t:{e}:inf", 10); !ok || err != nil {
				t.Fatalf("infinite rate refused: %v", err)
			}
		}
		if n := s.Client.Exists(ctx, "t:{e}:zero", "t:{e}:inf").Val(); n != 0 {
			t.Fatalf("rate 0 / Inf wrote %d keys; they need no state", n)
		}
		// Wait respects its deadline up front, without taking a token.
		slow := politeness.NewLimiter(s.Client, 0.01, 1)
		slow.Allow(ctx, "t:{e}:slow")
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := slow.Wait(dctx, "t:{e}:slow"); !errors.Is(err, politeness.ErrWouldExceedDeadline) {
			t.Fatalf("Wait needing 100s under a 1s deadline: %v", err)
		}
	})
}

func TestIdleBucketsExpire(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		lim := politeness.NewLimiter(s.Client, 2, 4) // refills fully in 2 s after 4 requests
		for i := 0; i < 4; i++ {
			lim.Allow(ctx, "t:{x}:host")
		}
		pttl := s.Client.PTTL(ctx, "t:{x}:host").Val()
		if pttl <= 1900*time.Millisecond || pttl > 2100*time.Millisecond {
			t.Fatalf("TTL of an empty bucket at r=2/s b=4 is %v, want the 2 s it takes to refill", pttl)
		}
		if s.Mini != nil {
			s.Mini.FastForward(2100 * time.Millisecond)
			if s.Client.Exists(ctx, "t:{x}:host").Val() != 0 {
				t.Fatal("bucket key still there after it would be full")
			}
		}
	})
}

// Three OS processes with eight goroutines each hammer one host's bucket
// for five seconds; together they must get at most r·t + b and at least 95 %
// of that: the limit holds across processes, and does not starve them.
func TestHammerAcrossProcesses(t *testing.T) {
	s := redistest.Real(t)
	const r, b, procs = 50, 5, 3
	const dur = 5 * time.Second
	var cmds []*exec.Cmd
	var outs []*syncBuffer
	startRedis := redisNow(t, s.Client)
	for i := 0; i < procs; i++ {
		cmd := exec.Command(redistest.Self(t), "-test.run=^$")
		cmd.Env = append(os.Environ(), "POLITENESS_TEST_ROLE=hammer", "POLITENESS_TEST_REDIS="+s.URL(),
			"POLITENESS_TEST_DURATION="+dur.String())
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	total := 0
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("hammer %d: %v", i, err)
		}
		n, err := strconv.Atoi(outs[i].String())
		if err != nil {
			t.Fatalf("hammer %d printed %q", i, outs[i].String())
		}
		total += n
	}
	span := redisNow(t, s.Client).Sub(startRedis) // an upper bound on the hammering window
	upper := r*span.Seconds() + b
	lower := 0.95 * (r*dur.Seconds() + b)
	t.Logf("%d processes admitted %d in %v (upper bound %.0f, lower bound %.0f)", procs, total, span, upper, lower)
	if float64(total) > upper || float64(total) < lower {
		t.Fatalf("admitted %d; want between %.0f and %.0f", total, lower, upper)
	}
}

func redisNow(t *testing.T, c *redis.Client) time.Time {
	tm, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func runHammer() int {
	opt, _ := redis.ParseURL(os.Getenv("POLITENESS_TEST_REDIS"))
	c := redis.NewClient(opt)
	defer c.Close()
	dur, _ := time.ParseDuration(os.Getenv("POLITENESS_TEST_DURATION"))
	lim := politeness.NewLimiter(c, 50, 5)
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ok, err := lim.Allow(ctx, "t:{hammer}:host")
				if ok && err == nil {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Print(admitted.Load())
	return 0
}

type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// A paused host gets no token until the pause ends, however long the
// caller would wait; pauses grow on repeats, the server's Retry-After wins
// when longer, and granted tokens make the back-off decay.
func TestPausedHostGetsNoToken(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		if s.Mini != nil {
			s.Mini.SetTime(time.Now())
		}
		lim := politeness.NewLimiter(s.Client, 10, 2)
		const key = "crawl:t:rate:{h.example}"
		if ok, err := lim.Allow(ctx, key); err != nil || !ok {
			t.Fatalf("Allow before any pause: %v, %v", ok, err)
		}
		pause := func(retryAfter, want time.Duration) {
			t.Helper()
			if d, err := lim.Pause(ctx, key, retryAfter); err != nil || d != want {
				t.Fatalf("Pause(%v) = %v, %v; want %v", retryAfter, d, err, want)
			}
		}
		pause(0, politeness.PauseMin)
		r, err := lim.ReserveN(ctx, key, 1, time.Hour)
		if err != nil || r.OK || r.Delay <= 0 || r.Delay > politeness.PauseMin {
			t.Fatalf("ReserveN while paused = %+v, %v; want refused until the pause ends", r, err)
		}
		pause(0, 2*politeness.PauseMin)       // a second pause doubles
		pause(30*time.Second, 30*time.Second) // Retry-After, when longer, wins
		if s.Mini == nil {
			return // moving the server's clock needs miniredis
		}
		s.Mini.SetTime(time.Now().Add(31 * time.Second)) // the pause is over
		if ok, err := lim.Allow(ctx, key); err != nil || !ok {
			t.Fatalf("Allow after the pause: %v, %v", ok, err)
		}
		pause(0, 2*politeness.PauseMin) // three pauses, halved to one by the token: the next is the second
	})
}
