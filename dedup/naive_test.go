package dedup_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redcrawl/crawler/alternatives"
	"github.com/redcrawl/crawler/dedup"
	"github.com/redcrawl/crawler/internal/redistest"
)

// fetchAll has `workers` workers meet the same `urls` links at the same
// moment (every page of a documentation site links its navigation), each
// deciding with decide whether the URL is new to it, and counts how many
// fetches follow. The barrier puts every worker's first call before any
// worker's second: the interleaving that a busy crawl meets by chance.
func fetchAll(t *testing.T, workers int, urls []string, decide func(ctx context.Context, barrier func(), urls []string) []bool) int64 {
	t.Helper()
	var fetches atomic.Int64
	var first sync.WaitGroup
	first.Add(workers)
	barrier := func() { first.Done(); first.Wait() }
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, isNew := range decide(context.Background(), barrier, urls) {
				if isNew {
					fetches.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return fetches.Load()
}

// realFilter is a fresh filter on a real redis-server.
func realFilter(t *testing.T) *dedup.Filter {
	t.Helper()
	s := redistest.Real(t)
	f, err := dedup.Open(context.Background(), s.Client, "t:{seen}", dedup.Params{Capacity: 10_000, FPRate: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sharedLinks(n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://docs.example.org/guide/%d.html", i)
	}
	return urls
}

// The blog posts' dedup: ask the filter (Contains), then add (two calls).
// Four workers that meet the same 200 links at once are all told "new":
// 800 fetches for 200 URLs.
func TestNaiveBloomCheckThenAddFetchesDuplicates(t *testing.T) {
	f, urls := realFilter(t), sharedLinks(200)
	got := fetchAll(t, 4, urls, func(ctx context.Context, barrier func(), urls []string) []bool {
		present, err := f.Contains(ctx, urls)
		if err != nil {
			t.Error(err)
		}
		barrier()
		if _, err := f.AddNew(ctx, urls); err != nil { // the add; its answer is not asked
			t.Error(err)
		}
		isNew := make([]bool, len(present))
		for i, p := range present {
			isNew[i] = !p
		}
		return isNew
	})
	if got != 4*200 {
		t.Fatalf("%d fetches of 200 URLs by 4 workers; the naive check-then-add was expected to fetch each 4 times", got)
	}
	t.Logf("check, then add: %d fetches for %d URLs (%d duplicates)", got, len(urls), got-int64(len(urls)))
}

// The same workers with AddNew, test-and-set in one script: each URL is
// new to exactly one of them.
func TestBloomTestAndSetFetchesOnce(t *testing.T) {
	f, urls := realFilter(t), sharedLinks(200)
	got := fetchAll(t, 4, urls, func(ctx context.Context, barrier func(), urls []string) []bool {
		barrier()
		isNew, err := f.AddNew(ctx, urls)
		if err != nil {
			t.Error(err)
		}
		return isNew
	})
	if got != 200 {
		t.Fatalf("%d fetches of 200 URLs by 4 workers; want each once", got)
	}
}

// falsePositives adds n items to the plain filter b (the seeds' SETBIT
// filter, alternatives.PlainBloom) and returns the share of n*10 others
// it says it holds.
func falsePositives(t *testing.T, s *redistest.Server, b alternatives.PlainBloom, n int) float64 {
	t.Helper()
	ctx := context.Background()
	var added, others []string
	for i := 0; i < n; i++ {
		added = append(added, fmt.Sprintf("https://docs.example.org/added/%d", i))
	}
	if err := b.Add(ctx, s.Client, added); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10*n; i++ {
		others = append(others, fmt.Sprintf("https://docs.example.org/other/%d", i))
	}
	seen, err := b.Contains(ctx, s.Client, others)
	if err != nil {
		t.Fatal(err)
	}
	fp := 0
	for _, yes := range seen {
		if yes {
			fp++
		}
	}
	return float64(fp) / float64(len(others))
}

// A filter sized with 2^16 bits, as a post wrote it: in Go (and C, Java,
// JavaScript) ^ is XOR, so that is 18 bits, and the filter answers "seen"
// for nearly every URL — a crawler that believes it skips nearly all of
// them. With 1<<16 bits the same 1 000 URLs leave no false positive in
// 10 000 tries.
func TestNaiveBloomSizedWithCaretIsEighteenBits(t *testing.T) {
	s := redistest.Real(t)
	const written = 2 ^ 16 // what the post wrote: 18
	naive := falsePositives(t, s, alternatives.PlainBloom{Key: "naive:bloom", M: written, K: 7}, 1000)
	meant := falsePositives(t, s, alternatives.PlainBloom{Key: "meant:bloom", M: 1 << 16, K: 7}, 1000)
	if written != 18 || naive < 0.99 || meant > 0.001 {
		t.Fatalf("m = 2^16 = %d bits: false-positive rate %.4f; m = 1<<16: %.4f", written, naive, meant)
	}
	t.Logf("1 000 URLs, k = 7: m = 2^16 = 18 bits gives %.2f%% false positives; m = 1<<16 = 65 536 bits gives %.4f%%", 100*naive, 100*meant)
}
