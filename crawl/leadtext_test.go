package crawl

import (
	"testing"

	"github.com/redcrawl/crawler/frontier/events"
)

// How a new term is told: the holder before, and whether it handed the
// lock over or let its lease run out.
func TestLeadTextSaysWhoseLockItWasAndHowItEnded(t *testing.T) {
	lead := func(w string, epoch int64) events.Event {
		return events.Event{Kind: events.Lead, Worker: w, Epoch: epoch}
	}
	for _, c := range []struct {
		recent []events.Event // newest first
		want   string
	}{
		{nil, "epoch 1: w1 took the lock"},
		{[]events.Event{lead("w1", 3)}, "epoch 4: w2 took the lock after w1's lease ran out (no renewal within the lock's TTL)"},
		{[]events.Event{{Kind: events.Resign, Worker: "w1", Epoch: 3}, lead("w1", 3)}, "epoch 4: w2 took the lock after w1 handed it over"},
		{[]events.Event{{Kind: events.Pause}, lead("w2", 3), lead("w1", 2)}, "epoch 4: w2 took the lock again after w2's lease ran out (no renewal within the lock's TTL)"},
	} {
		id, epoch := "w2", int64(4)
		if c.recent == nil {
			id, epoch = "w1", 1
		}
		if got := leadText(c.recent, id, epoch); got != c.want {
			t.Errorf("leadText(%v) = %q; want %q", c.recent, got, c.want)
		}
	}
}
