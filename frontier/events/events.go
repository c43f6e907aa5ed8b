// Package events is the crawl's event log: what its coordination did, one
// sentence an event, for a person to follow ("epoch 4: w2 took the lock
// after w1's lease ran out"). A capped stream in the first shard's slot
// (events), written by the workers as it happens; status --json and the
// dashboard read it.
package events

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Log is the log, the first shard's stream "events": Frontier.Events.
type Log struct {
	c   redis.UniversalClient
	key string
}

// New is the log kept in the stream key, read and written through c.
func New(c redis.UniversalClient, key string) Log { return Log{c: c, key: key} }

// Kept is about how many events the log keeps (XADD MAXLEN ~).
const Kept = 1000

// Event kinds.
const (
	Lead     = "lead"     // a worker took the scheduler's lock
	Resign   = "resign"   // the scheduler handed the lock over
	Lost     = "lost"     // the scheduler's leadership ended without a handover
	Fenced   = "fenced"   // a stale scheduler's sweep was refused
	Pause    = "pause"    // a host was paused (429, 503, failures)
	Resend   = "resend"   // an exchange was sent again (a lost reply, lost writes)
	Recrawl  = "recrawl"  // a recrawl was asked for
	Hold     = "hold"     // the crawl was paused (Pause)
	Resume   = "resume"   // the crawl was resumed (Resume)
	HostRule = "host"     // a host's own rules were set or cleared by hand
	Settings = "settings" // the crawl's settings were changed (crawler set)
	Login    = "login"    // a worker logged in to the crawl's site, or its login failed (seed --login-url)
	Lagging  = "lagging"  // an export group is near the results streams' cap
	Commit   = "commit"   // a complete crawl's payload digests were committed (seed --dedup-from)
)

// Event is one entry of the log.
type Event struct {
	ID     string    `json:"id"`
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Worker string    `json:"worker,omitempty"`
	Epoch  int64     `json:"epoch,omitempty"`
	Text   string    `json:"text"`
}

// Add appends e to the log (its ID and At are Redis's).
func (f Log) Add(ctx context.Context, e Event) error {
	vals := []any{"kind", e.Kind, "text", e.Text}
	if e.Worker != "" {
		vals = append(vals, "worker", e.Worker)
	}
	if e.Epoch != 0 {
		vals = append(vals, "epoch", e.Epoch)
	}
	err := f.c.XAdd(ctx, &redis.XAddArgs{Stream: f.key, MaxLen: Kept, Approx: true, Values: vals}).Err()
	if err != nil {
		return fmt.Errorf("frontier: event log: %w", err)
	}
	return nil
}

// Read is the newest n events, newest first.
func (f Log) Read(ctx context.Context, n int) ([]Event, error) {
	msgs, err := f.c.XRevRangeN(ctx, f.key, "+", "-", int64(n)).Result()
	if err != nil {
		return nil, fmt.Errorf("frontier: event log: %w", err)
	}
	out := make([]Event, 0, len(msgs))
	for _, m := range msgs {
		e := Event{ID: m.ID}
		if ms, _, ok := cutDash(m.ID); ok {
			e.At = time.UnixMilli(ms).UTC()
		}
		e.Kind, _ = m.Values["kind"].(string)
		e.Text, _ = m.Values["text"].(string)
		e.Worker, _ = m.Values["worker"].(string)
		if s, ok := m.Values["epoch"].(string); ok {
			e.Epoch, _ = strconv.ParseInt(s, 10, 64)
		}
		out = append(out, e)
	}
	return out, nil
}

// cutDash reads a stream id's milliseconds.
func cutDash(id string) (int64, string, bool) {
	for i := 0; i < len(id); i++ {
		if id[i] == '-' {
			ms, err := strconv.ParseInt(id[:i], 10, 64)
			return ms, id[i+1:], err == nil
		}
	}
	return 0, "", false
}
