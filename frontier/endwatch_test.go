package frontier

import "testing"

// The end of a crawl over several shards, sweep by sweep, with no Redis:
// over after two whole sweeps in a row that find every shard empty and
// nothing queued at the back of any between them, or once the pages reach
// the budget; a whole sweep under an epoch before this one fences every
// shard.
func TestEndWatchSweepBySweep(t *testing.T) {
	type sweep struct {
		epoch     int64
		failed    bool // the sweep did not finish
		empty     bool
		enqueued  []int64
		pages     int64
		budget    int64
		over      bool
		fencedAll bool
	}
	for _, tc := range []struct {
		name   string
		sweeps []sweep
	}{
		{"two empty sweeps with nothing queued between them end it", []sweep{
			{epoch: 1, empty: true, enqueued: []int64{5, 3}},
			{epoch: 1, empty: true, enqueued: []int64{5, 3}, over: true, fencedAll: true},
		}},
		{"one empty sweep is not enough", []sweep{
			{epoch: 1, empty: false, enqueued: []int64{5, 3}},
			{epoch: 1, empty: true, enqueued: []int64{5, 3}, fencedAll: true},
		}},
		{"a URL queued between two empty sweeps keeps the crawl going", []sweep{
			{epoch: 1, empty: true, enqueued: []int64{5, 3}},
			{epoch: 1, empty: true, enqueued: []int64{5, 4}, fencedAll: true},
			{epoch: 1, empty: true, enqueued: []int64{5, 4}, over: true, fencedAll: true},
		}},
		{"a sweep that failed between them starts the count again", []sweep{
			{epoch: 1, empty: true, enqueued: []int64{5, 3}},
			{epoch: 1, failed: true},
			{epoch: 1, empty: true, enqueued: []int64{5, 3}, fencedAll: true},
			{epoch: 1, empty: true, enqueued: []int64{5, 3}, over: true, fencedAll: true},
		}},
		{"the budget reached ends it at once, empty or not", []sweep{
			{epoch: 1, empty: false, enqueued: []int64{9, 9}, pages: 99, budget: 100},
			{epoch: 1, empty: false, enqueued: []int64{9, 9}, pages: 100, budget: 100, over: true, fencedAll: true},
		}},
		{"a new scheduler's first whole sweep has not fenced every shard yet", []sweep{
			{epoch: 1, empty: false, enqueued: []int64{1, 1}},
			{epoch: 2, empty: false, enqueued: []int64{1, 1}},
			{epoch: 2, empty: false, enqueued: []int64{1, 1}, fencedAll: true},
			{epoch: 3, empty: true, enqueued: []int64{1, 1}},
			{epoch: 3, empty: true, enqueued: []int64{1, 1}, over: true, fencedAll: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e endWatch
			for i, s := range tc.sweeps {
				if s.failed {
					e.failed()
					continue
				}
				over, fenced := e.swept(s.epoch, s.empty, s.enqueued, s.pages, s.budget)
				if over != s.over || fenced != s.fencedAll {
					t.Fatalf("sweep %d: over %v, fenced all %v; want %v, %v", i+1, over, fenced, s.over, s.fencedAll)
				}
			}
		})
	}
}
