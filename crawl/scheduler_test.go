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
	s := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { c.Close() })
	sc := &scheduler{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx := context.Background()
	for i := range 50 {
		el, err := leader.NewElector(c, "lead", "w1", leader.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		l, err := el.Campaign(ctx)
		if err != nil {
			t.Fatal(err)
		}
		timer := time.NewTimer(0)
		if err := l.Resign(ctx); err != nil { // ends the leadership
			t.Fatal(err)
		}
		<-l.Done()
		if !sc.await(ctx, l, timer, nil) {
			t.Fatalf("wake %d: await ended leading with the sweep due; want the sweep sent", i)
		}
		// With no sweep due, the ended leadership ends the wait.
		timer.Reset(time.Hour)
		if sc.await(ctx, l, timer, nil) {
			t.Fatalf("wake %d: await went on after the leadership ended with no sweep due", i)
		}
		timer.Stop()
	}
}
