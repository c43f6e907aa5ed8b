package crawl

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redcrawl/crawler/leader"
	"github.com/redis/go-redis/v9"
)

// A scheduler that wakes to find both its sweep due and its leadership
// over (a pause past the lock's TTL) sends the sweep, so that the fence,
// not the order in which one select saw two ready channels, refuses it.
// Before, await chose between the two at random: over 50 wakes, some
// would have ended without the sweep.
func TestAWokenSchedulerSendsTheSweepThatCameDue(t *testing.T) {
	c := schedulerRedis(t)
	sc := &scheduler{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	for i := range 50 {
		l := lead(t, c)
		timer := time.NewTimer(0)
		if err := l.Resign(ctx); err != nil { // ends the leadership
			t.Fatal(err)
		}
		<-l.Done()
		if !sc.await(ctx, l, timer, nil, nil) {
			t.Fatalf("wake %d: await ended leading with the sweep due; want the sweep sent", i)
		}
		// With no sweep due, the ended leadership ends the wait.
		timer.Reset(time.Hour)
		if sc.await(ctx, l, timer, nil, nil) {
			t.Fatalf("wake %d: await went on after the leadership ended with no sweep due", i)
		}
		timer.Stop()
	}
}

// Over shards, a "drained" message brings a sweep only once every shard
// the last sweep found busy has sent one: before, each shard's drained
// brought a sweep of all of them, a round trip each, while the others
// still had work and the crawl could not be over.
func TestADrainedSweepWaitsForEveryBusyShard(t *testing.T) {
	c := schedulerRedis(t)
	sc := &scheduler{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	l := lead(t, c)
	defer l.Resign(ctx)
	drained := func(ch string) *redis.Message { return &redis.Message{Channel: ch, Payload: "drained"} }
	msgs := make(chan *redis.Message, 4)
	msgs <- drained("a")
	msgs <- &redis.Message{Channel: "b", Payload: "1"} // URLs again: not a drain
	msgs <- drained("a")                               // again: b still has work
	msgs <- drained("b")
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	if !sc.await(ctx, l, timer, msgs, map[string]bool{"a": true, "b": true}) {
		t.Fatal("await ended leading; want a sweep")
	}
	if n := len(msgs); n != 0 {
		t.Fatalf("the sweep came with %d messages unread; want it after b's drain, the last", n)
	}
	// A drained message from a shard not busy at the last sweep, or with
	// none busy (one shard), brings the sweep at once.
	msgs <- drained("a")
	msgs <- drained("b")
	if !sc.await(ctx, l, timer, msgs, map[string]bool{}) || len(msgs) != 1 {
		t.Fatalf("with no shard busy, await read %d of 2 messages; want a sweep after the first", 2-len(msgs))
	}
}

// schedulerRedis is a miniredis for a scheduler's lock.
func schedulerRedis(t *testing.T) *redis.Client {
	s := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { c.Close() })
	return c
}

// lead takes the scheduler's lock on c.
func lead(t *testing.T, c *redis.Client) *leader.Leadership {
	t.Helper()
	el, err := leader.NewElector(c, "lead", "w1", leader.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	l, err := el.Campaign(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return l
}
