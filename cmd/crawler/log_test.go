package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A worker cut off from Redis warns several times a second; the log says
// it once a window, with how many it held back, and lets distinct lines
// (another message, another page) and info lines through.
func TestRepeatedWarningsAreCounted(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	log := slog.New(newQuietRepeats(slog.NewTextHandler(&out, nil), func() time.Time { return now })).With("worker", "w1")
	for i := 0; i < 5; i++ {
		log.Warn("heartbeat failed", "err", errors.New("dial tcp: lookup redis: no such host"))
		log.Info("progress", "pages", i)
	}
	log.Warn("page failed", "url", "http://a/1", "err", "timeout")
	log.Warn("page failed", "url", "http://a/2", "err", "timeout")
	slog.New(newQuietRepeats(slog.NewTextHandler(&out, nil), func() time.Time { return now })).With("worker", "w2").
		Warn("heartbeat failed", "err", "x") // another worker's handler: its own state
	now = now.Add(repeatWindow)
	log.Warn("heartbeat failed", "err", errors.New("dial tcp: connection refused"))
	log.Warn("heartbeat failed", "err", errors.New("dial tcp: connection refused"))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var heartbeats []string
	infos := 0
	for _, l := range lines {
		switch {
		case strings.Contains(l, `msg="heartbeat failed" worker=w1`):
			heartbeats = append(heartbeats, l)
		case strings.Contains(l, "level=INFO"):
			infos++
		}
	}
	if len(heartbeats) != 2 || strings.Contains(heartbeats[0], "repeated=") || !strings.HasSuffix(heartbeats[1], "repeated=4") ||
		!strings.Contains(heartbeats[1], "connection refused") {
		t.Fatalf("w1's heartbeat warnings: %q; want the first, then one a window later with repeated=4 and the new error", heartbeats)
	}
	if infos != 5 || strings.Count(out.String(), `msg="page failed"`) != 2 || !strings.Contains(out.String(), "worker=w2") {
		t.Fatalf("info lines, distinct pages or another worker's line were held back:\n%s", out.String())
	}
}
