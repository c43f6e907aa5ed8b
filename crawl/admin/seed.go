package admin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/bounded"
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
	// Moved counts seeds that were queued or in flight already: each
	// queued one was moved to its priority, one in flight left to its
	// fetch (counted in Queued and Seen), never queued twice.
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
	render *settings.RenderRules
	laned  bounded.Set // the hosts put in the render lane for a --render-match
}

// NewSeeder stores s as the crawl's settings (creating the crawl when it
// is new; see settings.Store) and opens its filter.
func NewSeeder(ctx context.Context, c redis.UniversalClient, name string, s settings.Settings, o SeedOptions) (*Seeder, error) {
	if err := crawl.CheckName(name); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if err := checkDedupFrom(ctx, c, name, s.DedupFrom); err != nil {
		return nil, err
	}
	if _, err := settings.Load(ctx, c, name); errors.Is(err, crawl.ErrNoCrawl) {
		if err := fitsRedis(ctx, c, name, s); err != nil { // a new crawl's filter is allocated whole
			return nil, err
		}
	}
	s, err := settings.Store(ctx, c, name, s)
	if err != nil {
		return nil, err
	}
	fr, err := frontier.Create(ctx, c, name, crawl.FrontierOptions(s), s.Bloom())
	if err != nil {
		return nil, err
	}
	rr, err := settings.NewRenderRules(s)
	if err != nil {
		return nil, err
	}
	if s.Render == settings.RenderAlways {
		// Before any URL is queued: every host is the render lane's.
		if err := fr.Render.SetDefaultLane(ctx, frontier.LaneRender); err != nil {
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
	b := sd.batch(seeds, kind)
	// Scope first: a worker must never see a seed whose host it would reject.
	if err := sd.fr.Scope.Add(ctx, b.hosts); err != nil {
		return fmt.Errorf("crawl: seed: %w", err)
	}
	if err := sd.fr.Reopen(ctx); err != nil { // a crawl of several shards; see Reopen
		return fmt.Errorf("crawl: seed: %w", err)
	}
	if err := sd.lanes(ctx, b.items); err != nil {
		return err
	}
	queued, seen, moved, err := sd.enqueue(ctx, b.items)
	if err != nil {
		return err
	}
	// The batch went in: remember it.
	sd.report.Queued += queued
	sd.report.Seen += seen
	sd.report.Moved += moved
	sd.report.Duplicates += b.dups
	for _, id := range b.ids {
		sd.given[id] = struct{}{}
	}
	for _, h := range b.hosts {
		sd.hosts[h] = struct{}{}
	}
	return nil
}

// seedBatch is a batch of seeds as the Seeder sends it: the items not
// given before (by their URL's hash, ids), the hosts new to it, and how
// many were given before.
type seedBatch struct {
	items []frontier.Item
	ids   [][16]byte
	hosts []string
	dups  int
}

// batch makes seeds a batch, leaving out those given before or twice in it.
func (sd *Seeder) batch(seeds []*url.URL, kind string) seedBatch {
	var b seedBatch
	newIDs := map[[16]byte]struct{}{}
	newHosts := map[string]struct{}{}
	b.items = make([]frontier.Item, 0, len(seeds))
	for _, u := range seeds {
		s := u.String()
		sum := sha256.Sum256([]byte(s))
		id := [16]byte(sum[:16])
		_, given := sd.given[id]
		_, now := newIDs[id]
		if given || now {
			b.dups++
			continue
		}
		newIDs[id] = struct{}{}
		b.ids = append(b.ids, id)
		_, known := sd.hosts[u.Host]
		_, added := newHosts[u.Host]
		if !known && !added {
			newHosts[u.Host] = struct{}{}
			b.hosts = append(b.hosts, u.Host)
		}
		b.items = append(b.items, frontier.Item{URL: s, Kind: kind, Priority: sd.o.Priority})
	}
	return b
}

// lanes puts the host of a seed that matches --render-match in the render
// lane before the seed is queued.
func (sd *Seeder) lanes(ctx context.Context, items []frontier.Item) error {
	for _, it := range items {
		if u, err := url.Parse(it.URL); err == nil && !sd.laned.Has(u.Host) && sd.render.Matches(it.URL) {
			if _, err := sd.fr.Render.SetLane(ctx, u.Host, frontier.LaneRender); err != nil {
				return fmt.Errorf("crawl: seed: %w", err)
			}
			sd.laned.Add(u.Host)
		}
	}
	return nil
}

// enqueue queues items (those seen before too, unless --skip-seen), a
// seed already queued moved to its priority rather than queued twice,
// one in flight left to its fetch, and counts them.
func (sd *Seeder) enqueue(ctx context.Context, items []frontier.Item) (queued, seen, moved int, err error) {
	again := 0 // seen, waiting nowhere: queued again by Requeue
	enqueue := sd.fr.EnqueueAll
	if sd.o.SkipSeen {
		enqueue = sd.fr.Enqueue
	} else {
		was, err := sd.fr.Requeue(ctx, items)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("crawl: seed: %w", err)
		}
		rest := items[:0:0]
		for i, it := range items {
			switch was[i] {
			case frontier.Moved:
				moved++
			case frontier.QueuedAgain:
				again++
			default:
				rest = append(rest, it)
			}
		}
		items = rest
	}
	fresh, err := enqueue(ctx, items)
	if err != nil {
		return 0, 0, 0, err
	}
	queued, seen = moved+again, moved+again
	for _, f := range fresh {
		if !f {
			seen++
		}
		if f || !sd.o.SkipSeen {
			queued++
		}
	}
	return queued, seen, moved, nil
}

// Report is what the Seeder did so far.
func (sd *Seeder) Report() SeedReport { return sd.report }

// Seed adds seeds in one batch: NewSeeder, then Add.
func Seed(ctx context.Context, c redis.UniversalClient, name string, s settings.Settings, seeds []*url.URL) (SeedReport, error) {
	sd, err := NewSeeder(ctx, c, name, s, SeedOptions{})
	if err != nil {
		return SeedReport{}, err
	}
	err = sd.Add(ctx, seeds)
	return sd.Report(), err
}
