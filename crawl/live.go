package crawl

import (
	"context"
	"fmt"
	"net/http"

	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/parse"
)

// live is what a worker acts on of the crawl's settings: one version of
// them, with what is compiled from them, swapped whole when they change
// (admin.SetSettings). A response is read under one version (its links, extract
// rules, filters, depth), which its record names (Record.SettingsVersion);
// the checks before a fetch (the budget, robots.txt's give-up, the rate)
// read the newest.
type live struct {
	s       settings.Settings
	fields  []parse.Field   // the extract rules, compiled
	rules   *settings.Rules // filters and trap defences for discovered URLs
	headers http.Header
	render  *settings.RenderRules
}

func newLive(s settings.Settings) (*live, error) {
	l := &live{s: s}
	var err error
	if l.fields, err = s.Fields(); err != nil {
		return nil, err
	}
	if l.rules, err = settings.NewRules(s); err != nil {
		return nil, err
	}
	if l.headers, err = s.HTTPHeaders(); err != nil {
		return nil, err
	}
	if l.render, err = settings.NewRenderRules(s); err != nil {
		return nil, err
	}
	return l, nil
}

// settings are the crawl's settings this worker acts on now.
func (w *Worker) settings() settings.Settings { return w.cur.Load().s }

// reload reads the crawl's settings and, when they are newer than those
// this worker acts on, acts on them from now on: the frontier's policy
// (the next exchange carries the new version, and pops under it), the
// fetcher's user agent and headers, the fetch loops' filters, depth, trap
// limits and extract rules, the scheduler's budget. Called by whichever
// goroutine learns of a newer version (an exchange's reply, a sweep's, a
// message on a wake channel); calls at once run one after the other.
func (w *Worker) reload(ctx context.Context) (*live, error) {
	w.reloadMu.Lock()
	defer w.reloadMu.Unlock()
	s, err := settings.Load(ctx, w.c, w.name)
	if err != nil {
		return nil, fmt.Errorf("reading the crawl's new settings: %w", err)
	}
	old := w.cur.Load()
	if s.Version <= old.s.Version {
		return old, nil
	}
	if s.Instance != old.s.Instance {
		return old, nil // another crawl under the name: the next exchange says it is gone
	}
	l, err := newLive(s)
	if err != nil {
		return nil, err
	}
	w.fetcher.SetIdentity(s.UserAgent, l.headers)
	w.cur.Store(l)
	w.fr.SetPolicy(policyOf(s)) // last: the next exchange pops under the new version

	w.log.Info("the crawl's settings changed: acting on the new ones", "version", s.Version)
	return l, nil
}
