package crawl

import (
	"context"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
)

func readyAt(url string, at time.Time) leased {
	return leased{lease: &frontier.Lease{Item: frontier.Item{URL: url}, NotBefore: at}}
}

// A loop takes the URL whose window opened first, and none whose window
// has not opened: one reserved for later does not hold up one due now.
func TestReadyQueueHandsOutByWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	q := newReadyQueue(time.Now)
	q.add(readyAt("later", t0.Add(300*time.Millisecond)), readyAt("now-1", t0), readyAt("soon", t0.Add(10*time.Millisecond)), readyAt("now-2", t0))
	steps := []struct {
		at   time.Duration
		want string        // "" for none
		next time.Duration // when none: when the first opens
	}{
		{0, "now-1", 0}, {0, "now-2", 0}, // equal windows go in the order popped
		{5 * time.Millisecond, "", 10 * time.Millisecond},
		{10 * time.Millisecond, "soon", 0},
		{299 * time.Millisecond, "", 300 * time.Millisecond},
		{time.Second, "later", 0},
		{time.Second, "", -1},
	}
	for i, s := range steps {
		l, ok, at := q.next(t0.Add(s.at))
		switch {
		case s.want != "" && (!ok || l.lease.Item.URL != s.want):
			t.Fatalf("step %d: got %v %v; want %s", i, ok, l.lease, s.want)
		case s.want == "" && ok:
			t.Fatalf("step %d: took %s before its window", i, l.lease.Item.URL)
		case s.want == "" && s.next >= 0 && !at.Equal(t0.Add(s.next)):
			t.Fatalf("step %d: the first opens at %v; want %v", i, at.Sub(t0), s.next)
		case s.want == "" && s.next < 0 && !at.IsZero():
			t.Fatalf("step %d: empty, yet something opens at %v", i, at)
		}
	}
}

// take waits for a URL added later, and gives up when the worker stops;
// it says when it found nothing queued at all.
func TestReadyQueueTakeWaits(t *testing.T) {
	q := newReadyQueue(time.Now)
	empty := make(chan struct{}, 10)
	got := make(chan string, 1)
	go func() {
		l, ok := q.take(context.Background(), func() { empty <- struct{}{} })
		if ok {
			got <- l.lease.Item.URL
		}
	}()
	<-empty // it looked, and waits
	q.add(readyAt("a", time.Now()))
	if u := <-got; u != "a" {
		t.Fatalf("took %q", u)
	}
	ctx, cancel := context.WithCancel(context.Background())
	q.add(readyAt("reserved", time.Now().Add(time.Hour)))
	done := make(chan bool)
	go func() {
		_, ok := q.take(ctx, func() {})
		done <- ok
	}()
	cancel()
	if <-done {
		t.Fatal("took a URL an hour before its window")
	}
	if n := len(q.drain()); n != 1 || q.len() != 0 {
		t.Fatalf("drained %d, %d left", n, q.len())
	}
}

// take reads the clock the windows were placed on (the worker's
// Options.Clock), not the process's: a window open by a clock an hour
// ahead is open now. Read on time.Now, take waited the hour.
func TestReadyQueueTakeReadsItsClock(t *testing.T) {
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	q := newReadyQueue(ahead)
	q.add(readyAt("open", ahead()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a guard against a hang, no measure
	defer cancel()
	l, ok := q.take(ctx, func() {})
	if !ok || l.lease.Item.URL != "open" {
		t.Fatalf("took %v %v; want the open URL at once", ok, l.lease)
	}
}
