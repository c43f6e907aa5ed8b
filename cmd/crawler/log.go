package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"
)

func logFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "log-format", EnvVars: []string{"CRAWLER_LOG_FORMAT"}, Value: "text",
			Usage: "log lines as 'text' (key=value, for people and grep) or 'json' (one object a line, for log shippers)"},
		&cli.StringFlag{Name: "log-level", EnvVars: []string{"CRAWLER_LOG_LEVEL"}, Value: "info",
			Usage: "least severe log lines shown: debug (each retry too), info, warn (failed pages and Redis trouble), error"},
	}
}

// checkLogFlags reports a bad --log-format or --log-level before anything runs.
func checkLogFlags(c *cli.Context) error {
	_, err := newLogger(io.Discard, c.String("log-format"), c.String("log-level"))
	return err
}

// newLogger builds the logger of --log-format and --log-level. Each line
// has a date and time to the millisecond, a level and structured
// attributes (worker, url, host, err …); a warning repeated within 10 s is
// held back and counted (quietRepeats).
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	o := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(newQuietRepeats(slog.NewTextHandler(w, o), time.Now)), nil
	case "json":
		return slog.New(newQuietRepeats(slog.NewJSONHandler(w, o), time.Now)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// cliLogger is the logger the global flags ask for, writing to the app's
// error stream.
func cliLogger(c *cli.Context) *slog.Logger {
	l, err := newLogger(c.App.ErrWriter, c.String("log-format"), c.String("log-level"))
	if err != nil { // checked in Before
		return slog.New(slog.NewTextHandler(c.App.ErrWriter, nil))
	}
	return l
}

// repeatWindow is how long a warning is not repeated: a worker cut off
// from Redis retries its heartbeat, exchange and campaign several times a
// second, and says so once a window, with the count of what it held back.
const repeatWindow = 10 * time.Second

// quietRepeats wraps a handler so that a warning or error equal to one
// logged less than repeatWindow ago (the same message and attributes, its
// error aside) is held back and counted; the next one after the window
// carries "repeated=N". Lines below warn, and distinct ones (each failed
// page has its URL), pass through. Safe for concurrent use.
type quietRepeats struct {
	next  slog.Handler
	attrs string // the attributes of WithAttrs, part of every key
	s     *repeatState
}

type repeatState struct {
	mu   sync.Mutex
	now  func() time.Time
	seen map[string]*repeat
}

type repeat struct {
	until time.Time
	held  int
}

// maxRepeatKeys bounds the state: past it, new lines pass uncounted.
const maxRepeatKeys = 4096

func newQuietRepeats(next slog.Handler, now func() time.Time) *quietRepeats {
	return &quietRepeats{next: next, s: &repeatState{now: now, seen: map[string]*repeat{}}}
}

func (q *quietRepeats) Enabled(ctx context.Context, l slog.Level) bool { return q.next.Enabled(ctx, l) }

func (q *quietRepeats) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return q.next.Handle(ctx, r)
	}
	var key strings.Builder
	key.WriteString(q.attrs)
	key.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "err" {
			key.WriteString("\x00" + a.String())
		}
		return true
	})
	s := q.s
	s.mu.Lock()
	now := s.now()
	e, ok := s.seen[key.String()]
	if ok && now.Before(e.until) {
		e.held++
		s.mu.Unlock()
		return nil
	}
	held := 0
	if ok {
		held = e.held
		e.until, e.held = now.Add(repeatWindow), 0
	} else {
		if len(s.seen) >= maxRepeatKeys {
			for k, e := range s.seen {
				if !now.Before(e.until) {
					delete(s.seen, k)
				}
			}
		}
		if len(s.seen) < maxRepeatKeys {
			s.seen[key.String()] = &repeat{until: now.Add(repeatWindow)}
		}
	}
	s.mu.Unlock()
	if held > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", held))
	}
	return q.next.Handle(ctx, r)
}

func (q *quietRepeats) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(q.attrs)
	for _, a := range as {
		b.WriteString(a.String() + "\x00")
	}
	return &quietRepeats{next: q.next.WithAttrs(as), attrs: b.String(), s: q.s}
}

func (q *quietRepeats) WithGroup(name string) slog.Handler {
	return &quietRepeats{next: q.next.WithGroup(name), attrs: q.attrs + name + ".\x00", s: q.s}
}
