package crawl

import (
	"testing"
	"time"
)

// A host's pause runs on the worker's clock, not the process's: on a
// clock a day ahead (or behind) a pause of a second still lasts a second
// of it.
func TestAPauseRunsOnTheWorkersClock(t *testing.T) {
	for _, offset := range []time.Duration{-24 * time.Hour, 0, 24 * time.Hour} {
		now := time.Now().Add(offset)
		p := newPauses(nil, "", func() time.Time { return now })
		p.set("h", time.Second)
		if got := p.left("h"); got != time.Second {
			t.Fatalf("offset %v: %v left at once; want 1s", offset, got)
		}
		now = now.Add(400 * time.Millisecond)
		if got := p.left("h"); got != 600*time.Millisecond {
			t.Fatalf("offset %v: %v left after 400ms; want 600ms", offset, got)
		}
		now = now.Add(600 * time.Millisecond)
		if got := p.left("h"); got != 0 {
			t.Fatalf("offset %v: %v left at its end; want 0", offset, got)
		}
		if p.left("other") != 0 {
			t.Fatalf("offset %v: a host never paused is paused", offset)
		}
	}
}
