package control

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// A crawl's settings change while it runs ('crawler set') in two places:
// the settings hash (the first shard's config), which workers read, and
// each shard's settings version (keyspace.Keys.Settings), which its pops read, so
// that no shard hands out a URL to a worker still acting on older
// settings (handout.lua). Every exchange's reply carries the version
// (PopInfo.Settings), and each change is said on the wake channels: a
// worker that missed the message learns it at its next exchange.

var (
	settingsScript = lua.Script("settings")
)

// VersionField is the settings hash's field that counts its changes (absent: 0).
const VersionField = "version"

// WakeSettings begins the message a change of the settings sends on every
// shard's wake channel: "settings N", N the new version.
const WakeSettings = "settings "

// ErrSettingsMoved: the settings changed since the caller read them (another
// change at the same time); read them again, and change those.
var ErrSettingsMoved = errors.New("frontier: the crawl's settings changed meanwhile")

// Budget is what a change does to the page budget (SetSettings).
type Budget int

const (
	BudgetKept    Budget = iota
	BudgetRaised         // raised or lifted: the crawl's done flags go (a crawl that ended on it goes on)
	BudgetLowered        // lowered: each shard's share takes back what it leaves unused
)

// SetSettings writes fields (config field -> stored text) into the crawl's
// settings, if their version is still read (else ErrSettingsMoved, nothing
// written), and makes the new version the one in force in every shard,
// doing to the budget what b says. With no fields it changes nothing and
// spreads the version in force again: a change that stopped half-way
// (a shard unreachable) is completed by running it again. It returns the
// version in force.
func (f Crawl) SetSettings(ctx context.Context, read int64, fields map[string]string, b Budget) (int64, error) {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	args := []any{f.Instance, strconv.FormatInt(read, 10), int(b), f.Keys[0].Wake(), ""}
	for _, k := range names {
		args = append(args, k, fields[k])
	}
	v, err := f.setSettings(ctx, f.Keys[0], args)
	if err != nil {
		return 0, err
	}
	for i, k := range f.Keys[1:] {
		if _, err := f.setSettings(ctx, k, []any{f.Instance, "", int(b), k.Wake(), v}); err != nil {
			return v, f.In(i+1, fmt.Errorf("%w (the settings are changed; run the same command again to finish)", err))
		}
	}
	return v, nil
}

func (f Crawl) setSettings(ctx context.Context, k keyspace.Keys, args []any) (int64, error) {
	res, err := settingsScript.Run(ctx, f.C, []string{k.Config, k.Settings, k.DoneFlag, k.Stats, k.Leases}, args...).Int64Slice()
	switch {
	case keyspace.IsGone(err):
		return 0, keyspace.ErrGone
	case err != nil:
		return 0, fmt.Errorf("frontier: change the settings: %w", err)
	case len(res) != 2:
		return 0, fmt.Errorf("frontier: change the settings: reply %v", res)
	case res[0] == 0:
		return res[1], fmt.Errorf("%w (now version %d)", ErrSettingsMoved, res[1])
	}
	return res[1], nil
}

// SettingsVersions reads each shard's settings version in force.
func (f Crawl) SettingsVersions(ctx context.Context) ([]int64, error) {
	cmds := make([]*redis.StringCmd, len(f.Keys))
	_, err := f.C.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range f.Keys {
			cmds[i] = p.Get(ctx, k.Settings)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("frontier: reading the settings versions: %w", err)
	}
	out := make([]int64, len(f.Keys))
	for i, c := range cmds {
		out[i], _ = strconv.ParseInt(c.Val(), 10, 64) // absent: 0
	}
	return out, nil
}

// SettingsMessage reads a wake channel's message: the version a change of
// the settings made, or false when it is another message.
func SettingsMessage(payload string) (int64, bool) {
	v, ok := strings.CutPrefix(payload, WakeSettings)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}
