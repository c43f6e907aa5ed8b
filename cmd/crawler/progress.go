package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redcrawl/crawler/crawl"
)

// progress shows how a crawl goes while a worker runs: on a terminal, one
// line redrawn every second; elsewhere (a file, a container's log), a log
// line every so often. Log lines pass through it (Write), so on a
// terminal they never land in the middle of the progress line.
type progress struct {
	mu   sync.Mutex
	out  io.Writer
	tty  bool
	line string // what is drawn now (terminal only)
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.line != "" {
		io.WriteString(p.out, "\r\033[K")
	}
	n, err := p.out.Write(b)
	if p.line != "" {
		io.WriteString(p.out, p.line)
	}
	return n, err
}

func (p *progress) draw(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.out, "\r\033[K"+line)
	p.line = line
}

// clear removes the progress line, for what is printed after the crawl.
func (p *progress) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.line != "" {
		io.WriteString(p.out, "\r\033[K")
		p.line = ""
	}
}

// sample is the crawl's page count at a moment.
type sample struct {
	at    time.Time
	pages int64
}

// rateWindow is how far back pages/s looks: long enough to smooth bursts
// of exchanges, short enough to follow a crawl that slows down.
const rateWindow = 10 * time.Second

// rate is pages per second between the oldest sample within the window and
// the newest; samples are oldest first. It trims samples past the window.
func rate(samples []sample) (float64, []sample) {
	last := samples[len(samples)-1]
	for len(samples) > 2 && last.at.Sub(samples[1].at) >= rateWindow {
		samples = samples[1:]
	}
	first := samples[0]
	if dt := last.at.Sub(first.at).Seconds(); dt > 0 {
		return float64(last.pages-first.pages) / dt, samples
	}
	return 0, samples
}

// progressLine is the terminal's one line: pages and how they ended, the
// rate, the frontier, and the time to drain what is queued now at that
// rate (new links keep arriving, so it is an estimate of the queue, not
// of the crawl).
func progressLine(p crawl.Progress, perSecond float64) string {
	n := p.Counters
	var b strings.Builder
	fmt.Fprintf(&b, "%d pages", n["pages"])
	if errs := n[crawl.OutcomeFailed] + n[crawl.OutcomeHTTPError]; errs > 0 {
		fmt.Fprintf(&b, " (%d errors)", errs)
	}
	fmt.Fprintf(&b, " · %.1f/s · %d queued · %d in flight", perSecond, p.Frontier.Queued, p.Frontier.InFlight)
	if p.Frontier.Deferred > 0 {
		fmt.Fprintf(&b, " · %d deferred", p.Frontier.Deferred)
	}
	if eta, ok := drainTime(p, perSecond); ok {
		fmt.Fprintf(&b, " · queue drains in ~%v", eta)
	}
	return b.String()
}

// drainTime estimates how long the queued URLs take at the current rate.
func drainTime(p crawl.Progress, perSecond float64) (time.Duration, bool) {
	left := p.Frontier.Queued + p.Frontier.InFlight + p.Frontier.Deferred
	if perSecond < 0.01 || left == 0 || float64(left)/perSecond < 1 {
		return 0, false
	}
	d := time.Duration(float64(left) / perSecond * float64(time.Second))
	if d > 1000*time.Hour {
		return 0, false
	}
	return d.Round(time.Second), true
}

// report samples the crawl every tick until ctx ends: on a terminal it
// redraws the line every second; otherwise it logs every `every` (0: never).
func (p *progress) report(ctx context.Context, w *crawl.Worker, log *slog.Logger, every time.Duration) {
	tick := every
	if p.tty {
		tick = time.Second
	}
	if tick <= 0 {
		return
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	var samples []sample
	if pr, err := w.Progress(ctx); err == nil {
		samples = append(samples, sample{time.Now(), pr.Counters["pages"]})
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pr, err := w.Progress(ctx)
		if err != nil {
			continue // the worker logs Redis trouble itself
		}
		samples = append(samples, sample{time.Now(), pr.Counters["pages"]})
		var perSecond float64
		perSecond, samples = rate(samples)
		if p.tty {
			p.draw(progressLine(pr, perSecond))
			continue
		}
		n := pr.Counters
		attrs := []any{"pages", n["pages"], "per_second", fmt.Sprintf("%.1f", perSecond),
			"ok", n[crawl.OutcomeOK], "http_error", n[crawl.OutcomeHTTPError], "failed", n[crawl.OutcomeFailed],
			"skipped", n[crawl.OutcomeSkipped], "queued", pr.Frontier.Queued, "in_flight", pr.Frontier.InFlight,
			"deferred", pr.Frontier.Deferred}
		if u := n[crawl.OutcomeUnchanged]; u > 0 {
			attrs = append(attrs, "unchanged", u)
		}
		if eta, ok := drainTime(pr, perSecond); ok {
			attrs = append(attrs, "queue_drains_in", eta)
		}
		log.Info("progress", attrs...)
	}
}
