package slots_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/politeness/slots"
	"pgregory.net/rapid"
)

// The semaphore against a model, over random schedules of acquires,
// renewals, releases, holders that die (stop calling) and time that
// passes, for sizes from 1 to 64: every decision is the model's (a slot
// for a holder while fewer than size hold one, a renewal only of a slot
// still held), and no more than size ever hold one. On miniredis, whose
// clock the test sets, so that leases lapse exactly when the model says;
// on a real redis-server, whose clock runs, with leases of an hour that
// none outlives, and no step of time.
func TestTheSemaphoreKeepsToItsSizeAndFreesLapsedSlots(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		rapid.Check(t, func(rt *rapid.T) { semaphoreSchedule(rt, s) })
	})
}

func semaphoreSchedule(rt *rapid.T, s *redistest.Server) {
	ctx := context.Background()
	s.Client.FlushDB(ctx)
	now := time.UnixMilli(1_800_000_000_000)
	size := rapid.IntRange(1, 64).Draw(rt, "size")
	lease := time.Hour
	if s.Mini != nil {
		s.Mini.SetTime(now)
		lease = time.Duration(rapid.IntRange(1, 5000).Draw(rt, "lease ms")) * time.Millisecond
	}
	sem, err := slots.New(s.Client, size, lease)
	if err != nil {
		rt.Fatal(err)
	}
	holders := rapid.IntRange(1, 2*size+2).Draw(rt, "holders")
	until := map[int]time.Time{} // the model: holder -> when its slot lapses
	live := func() int {
		n := 0
		for _, u := range until {
			if u.After(now) {
				n++
			}
		}
		return n
	}
	for i := range rapid.IntRange(1, 200).Draw(rt, "steps") {
		h := rapid.IntRange(0, holders-1).Draw(rt, "holder")
		name := fmt.Sprintf("worker-%d", h)
		held := until[h].After(now)
		switch rapid.IntRange(0, 4).Draw(rt, "op") {
		case 0, 1:
			g, err := sem.Acquire(ctx, "sem", name)
			if err != nil {
				rt.Fatal(err)
			}
			want := held || live() < size
			if g.OK != want {
				rt.Fatalf("step %d: acquire by %s (held %v, %d of %d live): got %v, want %v", i, name, held, live(), size, g.OK, want)
			}
			if want {
				until[h] = now.Add(lease)
			} else if g.Held != size || g.Wait <= 0 || g.Wait > lease {
				rt.Fatalf("step %d: refused with %d held and a wait of %v; want %d and a wait within the lease", i, g.Held, g.Wait, size)
			}
		case 2:
			ok, err := sem.Renew(ctx, "sem", name)
			if err != nil {
				rt.Fatal(err)
			}
			if ok != held {
				rt.Fatalf("step %d: renewal by %s: got %v, want %v", i, name, ok, held)
			}
			if held {
				until[h] = now.Add(lease)
			}
		case 3:
			if err := sem.Release(ctx, "sem", name); err != nil {
				rt.Fatal(err)
			}
			delete(until, h)
		case 4:
			if s.Mini == nil {
				continue
			}
			now = now.Add(time.Duration(rapid.IntRange(0, int(2*lease/time.Millisecond)).Draw(rt, "ms")) * time.Millisecond)
			s.Mini.SetTime(now)
		}
		if live() > size {
			rt.Fatalf("step %d: the model holds %d of %d", i, live(), size)
		}
	}
}

func TestASemaphoreOfNoSlotsIsRefused(t *testing.T) {
	s := redistest.Mini(t)
	if _, err := slots.New(s.Client, 0, time.Second); err == nil {
		t.Fatal("a semaphore of 0 slots was made")
	}
}
