package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/control"
	"github.com/redcrawl/crawler/frontier/events"
	"github.com/redis/go-redis/v9"
)

// Settings changed while the crawl runs ('crawler set'). The settings hash
// is the one truth: a change is written there in one atomic step, only if
// no other change came since it was read (its version), and counts the
// version one up; each shard then holds the new version, which its pops
// compare with the one the calling worker acts on (handout.lua): a worker
// on older settings pops nothing until it has read the new ones. Workers
// hear of a change on the wake channels at once, and from every exchange's
// reply should they miss it (Worker.reload); what Lua enforces (rate,
// burst, delays, budget, caps) holds from the next pop, what a worker
// does itself (filters, depth, trap limits, extract rules, user agent,
// headers) from its next page.

// Change is one setting that SetSettings changed.
type Change struct {
	Flag     string // seed's flag, without "--"
	From, To string // as the settings hash stores them ("" for an empty list)
}

// String is the change as the event log and the command say it.
func (c Change) String() string {
	show := func(v string) string {
		if v == "" {
			return "none"
		}
		return strings.ReplaceAll(v, "\n", ", ")
	}
	return fmt.Sprintf("--%s %s → %s", c.Flag, show(c.From), show(c.To))
}

// SetReport is what SetSettings did.
type SetReport struct {
	Version  int64    // the settings version in force now
	Changes  []Change // none: the settings already said so (the version was spread again)
	Reopened bool     // the crawl had ended on its page budget, which was raised: it goes on
}

// ErrNotLive: a setting that cannot change while the crawl runs.
var ErrNotLive = errors.New("cannot change in a running crawl")

// setTries bounds how often SetSettings starts over when another change
// came between its read and its write.
const setTries = 5

// SetSettings changes the settings of crawl name: given maps seed's flags
// (without "--") to their values as seed takes them, each a Live setting.
// The new settings are validated as seed validates them; the user agent
// may change, but not its product token, which the robots.txt rules kept
// are matched against. A raised (or lifted) page budget reopens a crawl
// that ended on it. Each change is logged as one event, by who.
func SetSettings(ctx context.Context, c redis.UniversalClient, name string, given map[string]string, who string) (SetReport, error) {
	for flag := range given {
		st, ok := settingByFlag(flag)
		switch {
		case !ok:
			return SetReport{}, fmt.Errorf("%w: --%s is not a setting", crawl.ErrSettings, flag)
		case !st.Live:
			return SetReport{}, fmt.Errorf("--%s %w: %s", flag, ErrNotLive, NotLiveWhy(st))
		}
	}
	for try := 1; ; try++ {
		rep, err := setOnce(ctx, c, name, given, who)
		if !errors.Is(err, control.ErrSettingsMoved) || try == setTries {
			return rep, err
		}
	}
}

// setOnce reads the settings, applies given, and writes the change if the
// settings are still as read (else control.ErrSettingsMoved).
func setOnce(ctx context.Context, c redis.UniversalClient, name string, given map[string]string, who string) (SetReport, error) {
	old, fr, err := crawl.LoadFrontier(ctx, c, name)
	if err != nil {
		return SetReport{}, err
	}
	s := old
	for _, st := range settings.Table {
		if v, ok := given[st.Flag]; ok {
			if err := st.Parse(&s, v); err != nil {
				return SetReport{}, fmt.Errorf("%w: --%s: %v", crawl.ErrSettings, st.Flag, err)
			}
		}
	}
	if err := s.Validate(); err != nil {
		return SetReport{}, err
	}
	if s.AgentToken() != old.AgentToken() {
		return SetReport{}, fmt.Errorf("%w: --user-agent %q: its product token %q is not the crawl's %q, which the robots.txt rules "+
			"kept are matched against; keep the first word (change the version or the contact after it), or crawl anew",
			crawl.ErrSettings, s.UserAgent, s.AgentToken(), old.AgentToken())
	}
	rep := SetReport{}
	fields := map[string]string{}
	for _, st := range settings.Table {
		if from, to := st.Format(&old), st.Format(&s); from != to {
			rep.Changes = append(rep.Changes, Change{Flag: st.Flag, From: from, To: to})
			fields[st.Field] = to
		}
	}
	raised := old.MaxPages > 0 && (s.MaxPages == 0 || s.MaxPages > old.MaxPages)
	budget := control.BudgetKept
	switch {
	case raised:
		budget = control.BudgetRaised
	case s.MaxPages > 0 && (old.MaxPages == 0 || s.MaxPages < old.MaxPages):
		budget = control.BudgetLowered
	}
	wasDone := false
	if raised {
		if wasDone, err = fr.Done(ctx); err != nil {
			return rep, fmt.Errorf("crawl %q: %w", name, err)
		}
	}
	if rep.Version, err = fr.Control.SetSettings(ctx, old.Version, fields, budget); err != nil {
		if errors.Is(err, frontier.ErrGone) {
			return rep, fmt.Errorf("%w %q (reset meanwhile)", crawl.ErrNoCrawl, name)
		}
		return rep, fmt.Errorf("crawl %q: %w", name, err)
	}
	rep.Reopened = wasDone && (s.MaxPages == 0 || pagesBelow(ctx, fr, s.MaxPages))
	if len(rep.Changes) > 0 {
		crawl.LogEvent(ctx, fr.Events, slog.New(slog.DiscardHandler), events.Event{Kind: events.Settings, Text: rep.Sentence() + " (by " + who + ")"})
	}
	return rep, nil
}

// pagesBelow reports whether the crawl fetched fewer than budget pages (an
// error reads as no).
func pagesBelow(ctx context.Context, fr *frontier.Frontier, budget int64) bool {
	st, err := fr.Stats(ctx)
	return err == nil && st["pages"] < budget
}

// Sentence is the report as one line: the version, each change, and
// whether the crawl goes on.
func (r SetReport) Sentence() string {
	if len(r.Changes) == 0 {
		return fmt.Sprintf("settings version %d: nothing to change (it is in force in every shard)", r.Version)
	}
	parts := make([]string, len(r.Changes))
	for i, c := range r.Changes {
		parts[i] = c.String()
	}
	out := fmt.Sprintf("settings version %d: %s", r.Version, strings.Join(parts, "; "))
	if r.Reopened {
		out += "; the crawl, which had ended on its page budget, goes on"
	}
	return out
}

// settingByFlag is the setting whose flag is flag.
func settingByFlag(flag string) (settings.Setting, bool) {
	for _, st := range settings.Table {
		if st.Flag == flag {
			return st, true
		}
	}
	return settings.Setting{}, false
}

// NotLiveWhy says why a setting stays as seeded.
func NotLiveWhy(st settings.Setting) string {
	switch st.Field {
	case "scope", "keep_tracking_params":
		return "the URLs queued and seen were judged and written under it (reset and seed anew)"
	case "expected_urls", "fp_rate", "shards":
		return "the Bloom filters and the shards were laid out for it when the crawl was seeded"
	case "revisit", "revisit_min", "revisit_max", "keep_visits", "dedup_payloads":
		return "what each fetch keeps for the next is decided under it (reset and seed anew)"
	}
	return "it is fixed when the crawl is seeded (reset and seed anew)"
}

// LiveFlags are the flags of the settings 'crawler set' may change.
func LiveFlags() []string {
	var out []string
	for _, st := range settings.Table {
		if st.Live {
			out = append(out, st.Flag)
		}
	}
	return out
}
