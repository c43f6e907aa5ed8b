package settings

import (
	"context"
	"fmt"
	"strings"

	"github.com/redcrawl/crawler/frontier/control"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// Store writes s as the crawl's settings, or, when the crawl
// exists, checks that s matches them: ErrConflict names each difference and
// how to proceed.
func Store(ctx context.Context, c redis.UniversalClient, name string, s Settings) (Settings, error) {
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	want := s.Hash()
	want[control.InstanceField] = control.NewInstance() // kept only if this seed creates the crawl
	have, err := control.StoreConfig(ctx, c, name, want)
	if err != nil {
		return Settings{}, fmt.Errorf("crawl: store settings: %w", err)
	}
	s.Instance = have[control.InstanceField]
	withBefore(have)
	var diffs, live []string
	fixed := 0
	for _, st := range Table {
		if f := st.Field; have[f] != want[f] {
			diffs = append(diffs, fmt.Sprintf("--%s is %s, not %s", st.Flag, strings.ReplaceAll(have[f], "\n", ", "), strings.ReplaceAll(want[f], "\n", ", ")))
			if !st.Live {
				fixed++
			} else {
				for _, v := range strings.Split(want[f], "\n") { // a list: its flag repeated
					live = append(live, "--"+st.Flag+" "+shellWord(v))
				}
			}
		}
	}
	if len(diffs) > 0 {
		how := "seed with the same settings (or none) to add URLs, or run 'crawler reset' first, or pick another --crawl name"
		if fixed == 0 {
			how = "to change them in the running crawl: crawler set " + strings.Join(live, " ") + "; to add URLs, seed with the same settings (or none)"
		}
		return Settings{}, fmt.Errorf("%w %q: %s; %s", ErrConflict, name, strings.Join(diffs, "; "), how)
	}
	return s, nil
}

// shellWord is v as a shell reads it back: bare when it can be, else in
// single quotes.
func shellWord(v string) string {
	if v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/:=+-") == "" {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// Load reads the crawl's settings.
func Load(ctx context.Context, c redis.UniversalClient, name string) (Settings, error) {
	if err := keyspace.CheckName(name); err != nil {
		return Settings{}, err
	}
	m, err := control.ReadConfig(ctx, c, name)
	if err != nil {
		return Settings{}, fmt.Errorf("crawl: read settings: %w", err)
	}
	if len(m) == 0 {
		return Settings{}, fmt.Errorf("%w %q (run 'crawler seed' first, or check --crawl)", ErrNoCrawl, name)
	}
	s, err := fromHash(m)
	if err != nil {
		return Settings{}, fmt.Errorf("crawl: %q holds unusable settings: %w", name, err)
	}
	return s, nil
}
