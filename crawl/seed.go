package crawl

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redis/go-redis/v9"
)

// SeedReport says what seeding did.
type SeedReport struct {
	Queued int // seeds put on the frontier
	// Seen counts seeds the crawl's Bloom filter already held (or said it
	// held: a false positive looks the same). They are queued anyway
	// unless SeedOptions.SkipSeen, which skips them.
	Seen       int
	Duplicates int // seeds repeated within this seeding, removed
	// Moved counts seeds that were queued already: each was moved to its
	// priority (counted in Queued and Seen), never queued twice.
	Moved int
}

// SeedOptions tune a seeding.
type SeedOptions struct {
	// SkipSeen queues only seeds the filter does not hold, for users who
	// re-seed big lists; a Bloom false positive then skips a seed.
	SkipSeen bool
	// Priority is the seeds' priority among their hosts' URLs
	// (frontier.MinPriority to MaxPriority; 0, as links, by default).
	Priority int
}

// Seeder adds seeds to a crawl, batch by batch, so that a seed list of any
// length streams through a bounded buffer. A seed the user gave is queued
// even when the Bloom filter answers "seen" (like Scrapy's start requests),
// and the filter still learns it; duplicates within one Seeder are removed
// exactly, with 16 bytes of memory per distinct seed (a SHA-256 prefix)
// and no state in Redis beyond the queue and the filter.
type Seeder struct {
	fr     *frontier.Frontier
	o      SeedOptions
	given  map[[16]byte]struct{}
	hosts  map[string]struct{} // already in the scope set
	report SeedReport
	render *renderRules
	laned  boundedSet // the hosts put in the render lane for a --render-match
}

// NewSeeder stores s as the crawl's settings (creating the crawl when it
// is new; see StoreSettings) and opens its filter.
func NewSeeder(ctx context.Context, c redis.UniversalClient, name string, s Settings, o SeedOptions) (*Seeder, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if _, err := LoadSettings(ctx, c, name); errors.Is(err, ErrNoCrawl) {
		if err := fitsRedis(ctx, c, name, s); err != nil { // a new crawl's filter is allocated whole
			return nil, err
		}
	}
	s, err := StoreSettings(ctx, c, name, s)
	if err != nil {
		return nil, err
	}
	fr, err := frontier.Create(ctx, c, name, s.frontierOptions(), s.bloom())
	if err != nil {
		return nil, err
	}
	rr, err := newRenderRules(s)
	if err != nil {
		return nil, err
	}
	if s.Render == RenderAlways {
		// Before any URL is queued: every host is the render lane's.
		if err := fr.SetDefaultLane(ctx, frontier.LaneRender); err != nil {
			return nil, fmt.Errorf("crawl: seed: %w", err)
		}
	}
	return &Seeder{fr: fr, o: o, render: rr,
		given: map[[16]byte]struct{}{}, hosts: map[string]struct{}{}}, nil
}

// Add queues a batch of canonical seed URLs, widens the scope to their
// hosts, and reopens a finished crawl (the queueing does, in the script
// that queues; frontier.Reopen for the other shards of several).
func (sd *Seeder) Add(ctx context.Context, seeds []*url.URL) error { return sd.add(ctx, seeds, "") }

// AddSitemaps queues sitemaps to read (seed --sitemap), as Add queues pages.
func (sd *Seeder) AddSitemaps(ctx context.Context, sitemaps []*url.URL) error {
	return sd.add(ctx, sitemaps, frontier.KindSitemap)
}

// A batch that fails (Redis gone) changes nothing the Seeder remembers:
// given again, it is sent whole again.
func (sd *Seeder) add(ctx context.Context, seeds []*url.URL, kind string) error {
	var hosts []string
	var ids [][16]byte
	newIDs := map[[16]byte]struct{}{}
	newHosts := map[string]struct{}{}
	dups := 0
	items := make([]frontier.Item, 0, len(seeds))
	for _, u := range seeds {
		s := u.String()
		sum := sha256.Sum256([]byte(s))
		id := [16]byte(sum[:16])
		_, given := sd.given[id]
		_, now := newIDs[id]
		if given || now {
			dups++
			continue
		}
		newIDs[id] = struct{}{}
		ids = append(ids, id)
		_, known := sd.hosts[u.Host]
		_, added := newHosts[u.Host]
		if !known && !added {
			newHosts[u.Host] = struct{}{}
			hosts = append(hosts, u.Host)
		}
		items = append(items, frontier.Item{URL: s, Kind: kind, Priority: sd.o.Priority})
	}
	// Scope first: a worker must never see a seed whose host it would reject.
	if err := sd.fr.AddSeedHosts(ctx, hosts); err != nil {
		return fmt.Errorf("crawl: seed: %w", err)
	}
	if err := sd.fr.Reopen(ctx); err != nil { // a crawl of several shards; see Reopen
		return fmt.Errorf("crawl: seed: %w", err)
	}
	// A seed that matches --render-match: its host is the render lane's
	// before the seed is queued.
	for _, it := range items {
		if u, err := url.Parse(it.URL); err == nil && !sd.laned.has(u.Host) && sd.render.matches(it.URL) {
			if _, err := sd.fr.SetLane(ctx, u.Host, frontier.LaneRender); err != nil {
				return fmt.Errorf("crawl: seed: %w", err)
			}
			sd.laned.add(u.Host)
		}
	}
	enqueue := sd.fr.EnqueueAll
	moved := 0
	if sd.o.SkipSeen {
		enqueue = sd.fr.Enqueue
	} else {
		// A seed already queued is moved to its priority, not queued twice.
		was, err := sd.fr.Requeue(ctx, items)
		if err != nil {
			return fmt.Errorf("crawl: seed: %w", err)
		}
		rest := items[:0:0]
		for i, it := range items {
			if was[i] {
				moved++
			} else {
				rest = append(rest, it)
			}
		}
		items = rest
	}
	fresh, err := enqueue(ctx, items)
	if err != nil {
		return err
	}
	queued, seen := moved, moved
	for _, f := range fresh {
		if !f {
			seen++
		}
		if f || !sd.o.SkipSeen {
			queued++
		}
	}
	// The batch went in: remember it.
	sd.report.Queued += queued
	sd.report.Seen += seen
	sd.report.Moved += moved
	sd.report.Duplicates += dups
	for _, id := range ids {
		sd.given[id] = struct{}{}
	}
	for _, h := range hosts {
		sd.hosts[h] = struct{}{}
	}
	return nil
}

// Report is what the Seeder did so far.
func (sd *Seeder) Report() SeedReport { return sd.report }

// Seed adds seeds in one batch: NewSeeder, then Add.
func Seed(ctx context.Context, c redis.UniversalClient, name string, s Settings, seeds []*url.URL) (SeedReport, error) {
	sd, err := NewSeeder(ctx, c, name, s, SeedOptions{})
	if err != nil {
		return SeedReport{}, err
	}
	err = sd.Add(ctx, seeds)
	return sd.Report(), err
}
