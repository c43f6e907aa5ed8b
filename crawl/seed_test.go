package crawl_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// A seed the user gave is queued even when the Bloom filter answers
// "seen" (here a filter at a 50 % rate answers it for about one in twenty):
// none is lost to a false positive, duplicates are removed exactly, and
// --skip-seen makes seeds go through the filter.
func TestSeedsAreNeverFalsePositives(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		set := settings.Default()
		set.ExpectedURLs, set.FPRate = 3000, 0.5
		const distinct = 3000
		var seeds []*url.URL
		for i := 0; i < distinct; i++ {
			u, _ := url.Parse(fmt.Sprintf("http://h%d.example/page/%d", i%3, i))
			seeds = append(seeds, u)
			if i%10 == 0 {
				seeds = append(seeds, u) // the same seed twice in one seeding
			}
		}
		sd, err := admin.NewSeeder(ctx, s.Client, "fp", set, admin.SeedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for start := 0; start < len(seeds); start += 700 { // batches: duplicates span them
			if err := sd.Add(ctx, seeds[start:min(start+700, len(seeds))]); err != nil {
				t.Fatal(err)
			}
		}
		rep := sd.Report()
		queued := queuedOf(t, s.Client, "fp")
		if rep.Queued != distinct || queued != distinct || rep.Duplicates != distinct/10 {
			t.Fatalf("report %+v, %d on the queue; want all %d distinct seeds queued and %d duplicates removed",
				rep, queued, distinct, distinct/10)
		}
		if rep.Seen == 0 {
			t.Fatal("the filter never answered 'seen': the test shows nothing")
		}
		t.Logf("%d of %d seeds were false positives of the filter, queued anyway", rep.Seen, distinct)

		// The same seeds again with SkipSeen: all are in the filter now.
		sd, err = admin.NewSeeder(ctx, s.Client, "fp", set, admin.SeedOptions{SkipSeen: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := sd.Add(ctx, seeds); err != nil {
			t.Fatal(err)
		}
		if rep := sd.Report(); rep.Queued != 0 || rep.Seen != distinct {
			t.Fatalf("re-seeding with SkipSeen: %+v; want nothing queued, all %d seen", rep, distinct)
		}
	})
}

// queuedOf is how many URLs crawl name has queued, as status reads it.
func queuedOf(t *testing.T, c redis.UniversalClient, name string) int64 {
	t.Helper()
	sz, err := frontierOf(t, c, name, 1).Sizes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sz.Queued
}
