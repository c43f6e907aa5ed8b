package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redis/go-redis/v9"
)

// A host's own rules, set by hand (crawler host): its own rate and burst
// (frontier.Frontier.SetHostRule: kept in its shard, read by the pops
// from their next call), a pause of its own (the same pause a 429 sets,
// announced to the workers holding its URLs), or both cleared.

// HostChange is what crawler host asks of one host.
type HostChange struct {
	Rate  float64       // requests a second (+Inf: no limit); 0: leave it
	Burst int           // with Rate (0: 1)
	Pause time.Duration // 0: none
	Clear bool          // drop its own rate and lift its pause (before Rate and Pause)
	By    string        // who asked, for the event log
}

// ErrHost: a host argument that names no host.
var ErrHost = errors.New("not a host")

// NormalizeHost reads a host as the crawl keys it (its URLs' host, port
// included unless default): "Example.org", "example.org:8080", or a URL
// whose host it takes.
func NormalizeHost(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("%w: %q", ErrHost, s)
		}
		s = u.Host
		if p := u.Port(); (u.Scheme == "http" && p == "80") || (u.Scheme == "https" && p == "443") {
			s = u.Hostname()
		}
	}
	h := strings.ToLower(s)
	name := h
	if hh, _, err := net.SplitHostPort(h); err == nil {
		name = hh
	}
	if name == "" || strings.ContainsAny(h, "/?#@ \t") {
		return "", fmt.Errorf("%w: %q (give a host such as example.org or example.org:8080)", ErrHost, s)
	}
	return h, nil
}

// ChangeHost applies ch to host in crawl name, and logs each change as an
// event; it says what it did, a sentence a change.
func ChangeHost(ctx context.Context, c redis.UniversalClient, name, host string, ch HostChange) ([]string, error) {
	s, fr, err := loadFrontier(ctx, c, name)
	if err != nil {
		return nil, err
	}
	var did []string
	say := func(text string) {
		did = append(did, text)
		logEvent(ctx, fr, slog.New(slog.DiscardHandler), frontier.Event{Kind: frontier.EventHostRule, Text: text + " (by " + ch.By + ")"})
	}
	if ch.Clear {
		if err := fr.ClearHostRule(ctx, host); err != nil {
			return did, fmt.Errorf("crawl %q: %w", name, err)
		}
		say(fmt.Sprintf("host %s: its own rules cleared, its pause lifted; the crawl's rate holds (%s req/s, burst %d)", host, fmtRate(s.Rate), s.Burst))
	}
	if ch.Rate != 0 {
		burst := max(ch.Burst, 1)
		if err := fr.SetHostRule(ctx, host, ch.Rate, burst); err != nil {
			return did, fmt.Errorf("crawl %q: %w", name, err)
		}
		say(fmt.Sprintf("host %s: its own rate %s req/s, burst %d (the crawl's: %s, burst %d)", host, fmtRate(ch.Rate), burst, fmtRate(s.Rate), s.Burst))
	}
	if ch.Pause > 0 {
		d, err := fr.PauseHost(ctx, host, ch.Pause, "paused by "+ch.By)
		if err != nil {
			return did, fmt.Errorf("crawl %q: %w", name, err)
		}
		// The URLs of the host already popped (tokens reserved ahead) wait
		// it out too, in every worker that hears it.
		if err := newPauses(c, fr.PauseChannel(), time.Now).announce(ctx, host, d); err != nil {
			return did, fmt.Errorf("crawl %q: the pause holds for every pop, but announcing it failed (URLs popped before it may still go): %w", name, err)
		}
		say(fmt.Sprintf("host %s: paused for %v", host, d.Round(time.Second)))
	}
	return did, nil
}

// fmtRuleRate is a rule's rate as status writes it (0: no limit).
func fmtRuleRate(r float64) string {
	if r == 0 {
		return fmtRate(math.Inf(1))
	}
	return fmtRate(r)
}
