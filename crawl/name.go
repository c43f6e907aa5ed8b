package crawl

import (
	"context"

	"math"

	"github.com/redis/go-redis/v9"

	"github.com/redcrawl/crawler/crawl/pace"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
)

// MaxNameLen bounds a crawl name.
const MaxNameLen = keyspace.MaxNameLen

// CheckName accepts 1 to MaxNameLen letters, digits, '-', '_' and '.',
// starting with a letter or digit: the alphabet that keeps every crawl's
// keys apart from every other's (keyspace.CheckName).
func CheckName(name string) error { return keyspace.CheckName(name) }

// OpenFrontier opens the frontier of crawl name as its settings s (read
// with settings.Load) lay it out, for readers that watch it (the
// dashboard); a worker opens its own.
func OpenFrontier(ctx context.Context, c redis.UniversalClient, name string, s settings.Settings) (*frontier.Frontier, error) {
	return frontier.Open(ctx, c, name, FrontierOptions(s))
}

// FrontierOptions are what the settings say of the crawl's frontier.
func FrontierOptions(s settings.Settings) frontier.Options {
	o := frontier.Options{Shards: s.Shards, Instance: s.Instance, Policy: policyOf(s)}
	o.Continuous = s.Revisit > 0
	o.ResultsKept = s.ResultsKept
	return o
}

// policyOf is what the settings say of the pops, which a live change of
// them (admin.SetSettings) replaces in every worker.
func policyOf(s settings.Settings) frontier.Policy {
	p := frontier.Policy{PageBudget: s.MaxPages, HostPageCap: s.MaxPagesPerHost, HostConcurrency: s.HostConcurrency, Version: s.Version, Depth: s.Order == settings.OrderDepth}
	if s.Rate > 0 && !math.IsInf(s.Rate, 1) {
		p.HostRate, p.HostBurst = s.Rate, s.Burst
		p.PopAhead, _ = pace.PopTiming(s.Rate, s.Burst)
		p.PerAddress = s.Politeness == settings.PolitenessIP
	}
	p.DelayFactor, p.MaxDelay = s.DelayFactor, s.MaxDelay
	return p
}

// ReadFrontier is crawl name's frontier, to read: laid out as its settings
// say, without its Bloom filters.
func ReadFrontier(ctx context.Context, c redis.UniversalClient, name string) (*frontier.Frontier, error) {
	_, fr, err := LoadFrontier(ctx, c, name)
	return fr, err
}

// LoadFrontier is ReadFrontier with the settings it was laid out by.
func LoadFrontier(ctx context.Context, c redis.UniversalClient, name string) (settings.Settings, *frontier.Frontier, error) {
	s, err := settings.Load(ctx, c, name)
	if err != nil {
		return s, nil, err
	}
	fr, err := frontier.New(c, name, FrontierOptions(s))
	return s, fr, err
}
