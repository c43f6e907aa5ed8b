package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redis/go-redis/v9"
)

// A host's own rules, set by hand (crawler host): its own rate and burst
// (frontier.Frontier.Hosts.SetRule: kept in its shard, read by the pops
// from their next call), a pause of its own (the same pause a 429 sets,
// announced to the workers holding its URLs), a block (its URLs end
// with records, none fetched from the moment the command returns), or
// all cleared.

// HostChange is what crawler host asks of one host.
type HostChange struct {
	Rate  float64       // requests a second (+Inf: no limit); 0: leave it
	Burst int           // with Rate (0: 1)
	Pause time.Duration // 0: none
	Clear bool          // drop its own rate and lift its pause (before Rate and Pause)
	Block bool          // no request to it again: see blockHost
	// Wait bounds how long a block waits for the workers to give back the
	// host's URLs they hold (0: BlockWait).
	Wait time.Duration
	By   string // who asked, for the event log
}

// BlockWait is how long a block waits, by default, for the workers to
// give back the URLs of the host they hold: far more than a worker takes
// to reach a URL it popped, less than a lease.
const BlockWait = time.Minute

// MaxHostPause is the longest a host is paused by hand (crawler host
// --pause); a longer one is a block.
const MaxHostPause = 30 * 24 * time.Hour

// ErrStillLeased: a block's wait ended with URLs of the host still leased
// to workers (one paused, or cut off from Redis): those may yet be
// fetched, until their leases end.
var ErrStillLeased = errors.New("URLs of the host are still leased to workers")

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
	switch {
	case ch.Rate != 0 && !(ch.Rate >= settings.MinRate*(1-1e-9)):
		return nil, fmt.Errorf("%w: host %s: rate %v: want one request a day (1/86400) or more", crawl.ErrSettings, host, ch.Rate)
	case ch.Burst < 0 || ch.Burst > settings.MaxBurst:
		return nil, fmt.Errorf("%w: host %s: burst %d: want 1 to %d", crawl.ErrSettings, host, ch.Burst, settings.MaxBurst)
	case ch.Pause < 0 || ch.Pause > MaxHostPause:
		return nil, fmt.Errorf("%w: host %s: pause %v: want up to %v", crawl.ErrSettings, host, ch.Pause, MaxHostPause)
	}
	s, fr, err := crawl.LoadFrontier(ctx, c, name)
	if err != nil {
		return nil, err
	}
	var did []string
	say := func(text string) {
		did = append(did, text)
		crawl.LogEvent(ctx, fr.Events, slog.New(slog.DiscardHandler), events.Event{Kind: events.HostRule, Text: text + " (by " + ch.By + ")"})
	}
	if ch.Clear {
		if err := fr.Hosts.ClearRule(ctx, host); err != nil {
			return did, fmt.Errorf("crawl %q: %w", name, err)
		}
		// The workers hold the pause too (a URL popped before it waits it
		// out): they forget it now.
		if err := crawl.AnnouncePause(ctx, c, fr.PauseChannel(), host, 0); err != nil {
			return did, fmt.Errorf("crawl %q: the pause is lifted for every pop, but announcing it failed (workers lift it when it ends): %w", name, err)
		}
		say(fmt.Sprintf("host %s: its own rules cleared, its pause lifted; the crawl's rate holds (%s req/s, burst %d)", host, settings.FormatRate(s.Rate), s.Burst))
	}
	if ch.Rate != 0 {
		burst := max(ch.Burst, 1)
		if err := fr.Hosts.SetRule(ctx, host, ch.Rate, burst); err != nil {
			return did, fmt.Errorf("crawl %q: %w", name, err)
		}
		say(fmt.Sprintf("host %s: its own rate %s req/s, burst %d (the crawl's: %s, burst %d)", host, settings.FormatRate(ch.Rate), burst, settings.FormatRate(s.Rate), s.Burst))
	}
	if ch.Block {
		n, err := blockHost(ctx, c, fr, host, cmp.Or(ch.Wait, BlockWait))
		if err != nil && !errors.Is(err, ErrStillLeased) {
			return did, fmt.Errorf("crawl %q: %w", name, err)
		}
		say(fmt.Sprintf("host %s: blocked; %d of its queued URLs ended with records, and no link to it will be queued", host, n))
		if err != nil {
			return did, fmt.Errorf("crawl %q: host %s: %w", name, host, err)
		}
	}
	if ch.Pause > 0 {
		d, err := fr.Hosts.Pause(ctx, host, ch.Pause, "paused by "+ch.By)
		if err != nil {
			return did, fmt.Errorf("crawl %q: %w", name, err)
		}
		// The URLs of the host already popped (tokens reserved ahead) wait
		// it out too, in every worker that hears it.
		if err := crawl.AnnouncePause(ctx, c, fr.PauseChannel(), host, d); err != nil {
			return did, fmt.Errorf("crawl %q: the pause holds for every pop, but announcing it failed (URLs popped before it may still go): %w", name, err)
		}
		say(fmt.Sprintf("host %s: paused for %v", host, d.Round(time.Second)))
	}
	return did, nil
}

// FormatRuleRate is a rule's rate as status writes it (0: no limit).
func FormatRuleRate(r float64) string {
	if r == 0 {
		return settings.FormatRate(math.Inf(1))
	}
	return settings.FormatRate(r)
}

// blockHost blocks host (frontier.Frontier.Hosts.Block: no pop hands out its
// URLs, no link to it is queued, its queued URLs end with records) and
// returns once no worker holds a URL of it, so that no request reaches it
// after: it tells the workers, as a pause, to give back those they hold
// unfetched (a fetch under way ends first), waits up to wait for their
// leases to end, and ends with records the URLs they gave back. It
// returns how many URLs it ended; ErrStillLeased when the wait ended
// first.
func blockHost(ctx context.Context, c redis.UniversalClient, fr *frontier.Frontier, host string, wait time.Duration) (int64, error) {
	n, err := fr.Hosts.Block(ctx, host)
	if err != nil {
		return n, err
	}
	if err := crawl.AnnouncePause(ctx, c, fr.PauseChannel(), host, blockAnnounced); err != nil {
		return n, fmt.Errorf("the host is blocked for every pop, but telling the workers failed (URLs they hold may still go until their leases end): %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		held, err := fr.Hosts.Leases(ctx, host)
		if err != nil {
			return n, err
		}
		if held == 0 {
			break
		}
		if !time.Now().Before(deadline) {
			return n, fmt.Errorf("%w: %d after %v (a worker paused or cut off from Redis): they may be fetched until their leases end", ErrStillLeased, held, wait)
		}
		select {
		case <-ctx.Done():
			return n, ctx.Err()
		case <-time.After(blockPoll):
		}
	}
	m, err := fr.Hosts.Block(ctx, host) // the URLs the workers gave back
	return n + m, err
}

// blockAnnounced is how long the workers take a blocked host for paused:
// they give back its URLs they hold (the pops hand out none after the
// block); blockPoll, how often a block looks for the host's leases.
const blockAnnounced, blockPoll = 10 * time.Minute, 100 * time.Millisecond
