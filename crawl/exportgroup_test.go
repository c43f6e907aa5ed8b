package crawl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/internal/testsite"
)

// failAfter writes n records, then fails, as a sink killed mid-batch.
type failAfter struct {
	n   int
	buf bytes.Buffer
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("killed")
	}
	f.n--
	return f.buf.Write(p)
}

// streamIDs reads export lines by stream_id, counting repeats.
func streamIDs(t *testing.T, lines string, into map[string]int) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		if l == "" {
			continue
		}
		var rec crawl.Record
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.StreamID == "" {
			t.Fatalf("%q: %v (want a stream_id)", l, err)
		}
		into[rec.StreamID]++
	}
}

// Records through export groups: a reader killed three times mid-batch
// and restarted under its name is given again what it had not
// acknowledged, so the union of its output holds every record, none more
// than twice; two readers of another group split the records, none to
// both; status lists both groups, caught up.
func TestExportGroupsDeliverEveryRecordAtLeastOnce(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 40, ListenBase: "127.0.0.92"})
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		set := settings.Default()
		set.Rate, set.AllowPrivate = math.Inf(1), true
		seedSite(t, s, site, "grp", set)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		runWorkers(t, ctx, s, "grp", fastOptions("w1"))
		st, err := status.Read(ctx, s.Client, "grp")
		if err != nil {
			t.Fatal(err)
		}
		total := int(st.Counters["records"])

		got := map[string]int{}
		for kill := range 3 {
			f := &failAfter{n: 7 + kill}
			if _, err := admin.ExportGroup(ctx, s.Client, "grp", "sink", "a", f); err == nil {
				t.Fatal("a sink that failed was not told")
			}
			streamIDs(t, f.buf.String(), got)
		}
		var rest bytes.Buffer
		rep, err := admin.ExportGroup(ctx, s.Client, "grp", "sink", "a", &rest)
		if err != nil || !rep.Done {
			t.Fatalf("the last export: %+v, %v", rep, err)
		}
		streamIDs(t, rest.String(), got)
		if len(got) != total {
			t.Errorf("the killed reader's output holds %d records of %d", len(got), total)
		}
		for id, n := range got {
			if n > 2 {
				t.Errorf("%s written %d times; want at most twice", id, n)
			}
		}

		var mu sync.Mutex
		by := map[string]string{}
		var wg sync.WaitGroup
		for _, reader := range []string{"b", "c"} {
			wg.Go(func() {
				var out bytes.Buffer
				if _, err := admin.ExportGroup(ctx, s.Client, "grp", "two", reader, &out); err != nil {
					t.Error(err)
				}
				ids := map[string]int{}
				streamIDs(t, out.String(), ids)
				mu.Lock()
				defer mu.Unlock()
				for id := range ids {
					if other, ok := by[id]; ok {
						t.Errorf("%s given to %s and %s", id, other, reader)
					}
					by[id] = reader
				}
			})
		}
		wg.Wait()
		if len(by) != total {
			t.Errorf("the two readers wrote %d records of %d", len(by), total)
		}
		st, err = status.Read(ctx, s.Client, "grp")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Groups) != 2 || st.Groups[0].Behind() != 0 || st.Groups[1].Behind() != 0 || !strings.Contains(st.String(), "export      groups: sink") {
			t.Errorf("status's groups %+v:\n%s", st.Groups, st)
		}
	})
}

// A group that stops reading while the crawl goes on is said to lag
// once it is 80 % of --results-kept behind: status marks it and says
// what past the bound costs it.
func TestAGroupThatStopsReadingIsSaidToLag(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 70, ListenBase: "127.0.0.96"})
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		set := settings.Default()
		set.Rate, set.AllowPrivate, set.ResultsKept = math.Inf(1), true, 100
		seedSite(t, s, site, "lag", set)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stored, err := settings.Load(ctx, s.Client, "lag")
		if err != nil {
			t.Fatal(err)
		}
		fr, err := crawl.OpenFrontier(ctx, s.Client, "lag", stored)
		if err != nil {
			t.Fatal(err)
		}
		if err := fr.Records.JoinGroup(ctx, "lazy"); err != nil {
			t.Fatal(err)
		}
		runWorkers(t, ctx, s, "lag", fastOptions("w1"))
		st, err := status.Read(ctx, s.Client, "lag")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Groups) != 1 || !crawl.Lagging(st.Groups[0]) || !strings.Contains(st.String(), "lazy (0 readers") ||
			!strings.Contains(st.String(), "LAGS") || !strings.Contains(st.String(), "--results-kept") {
			t.Errorf("a group that read nothing of %d records, the bound 100: %+v\n%s", st.Counters["records"], st.Groups, st)
		}
	})
}

// The bound (seed --results-kept), held at its edge: a crawl whose
// streams reach exactly their cap (the fullest shard its share), with a
// group that read nothing during it and one that read everything, trims
// no record the first has not acknowledged: status says it lags (it is
// the whole cap behind); it reads a third, dies, the scheduler's trim
// takes only the third both acknowledged, and its restart reads every
// other record. One shard and three; miniredis and redis-server.
func TestNoRecordAGroupHasNotAcknowledgedIsTrimmedWithinTheBound(t *testing.T) {
	wholeCrawl(t)
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) { groupAtTheBound(t, shards) })
	}
}

func groupAtTheBound(t *testing.T, shards int) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 5, Pages: 40, ListenBase: "127.0.0.97"})
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		set := settings.Default()
		set.Rate, set.AllowPrivate, set.Shards = math.Inf(1), true, shards
		// A first crawl of the site says how many records each shard's
		// stream gets; the second's cap is the fullest one's exactly.
		perShard := crawlPerShard(t, ctx, s, site, "measure", set)
		set.ResultsKept = int64(shards) * slices.Max(perShard)
		seedSite(t, s, site, "edge", set)
		fr := openFrontier(t, ctx, s, "edge")
		for _, g := range []string{"eager", "lazy"} {
			if err := fr.Records.JoinGroup(ctx, g); err != nil {
				t.Fatal(err)
			}
		}
		runWorkers(t, ctx, s, "edge", fastOptions("w1"))
		st, err := status.Read(ctx, s.Client, "edge")
		if err != nil {
			t.Fatal(err)
		}
		total := int(st.Counters["records"])
		if len(st.Groups) != 2 || st.Groups[1].Fill != 1 || !crawl.Lagging(st.Groups[1]) || !strings.Contains(st.String(), "lazy (0 readers") {
			t.Errorf("a group the whole cap behind (%v records a shard): %+v\n%s", perShard, st.Groups, st)
		}
		eager := map[string]int{}
		var all bytes.Buffer
		if _, err := admin.ExportGroup(ctx, s.Client, "edge", "eager", "e", &all); err != nil {
			t.Fatal(err)
		}
		streamIDs(t, all.String(), eager)
		lazy := map[string]int{}
		dies := &failAfter{n: total / 3}
		if _, err := admin.ExportGroup(ctx, s.Client, "edge", "lazy", "l", dies); err == nil {
			t.Fatal("a sink that failed was not told")
		}
		streamIDs(t, dies.buf.String(), lazy)
		trimmed, err := fr.Records.TrimAcked(ctx) // the scheduler's next trim
		if err != nil {
			t.Fatal(err)
		}
		var rest bytes.Buffer
		if _, err := admin.ExportGroup(ctx, s.Client, "edge", "lazy", "l", &rest); err != nil {
			t.Fatal(err)
		}
		streamIDs(t, rest.String(), lazy)
		if len(eager) != total || len(lazy) != total || trimmed != int64(total/3) {
			t.Errorf("cap %d (%v records a shard): eager read %d, lazy %d of %d records; %d trimmed, want the %d both acknowledged",
				set.ResultsKept, perShard, len(eager), len(lazy), total, trimmed, total/3)
		}
	})
}

// crawlPerShard crawls the site to the end and counts the records each
// shard's results stream got.
func crawlPerShard(t *testing.T, ctx context.Context, s *redistest.Server, site *testsite.Site, name string, set settings.Settings) []int64 {
	t.Helper()
	seedSite(t, s, site, name, set)
	runWorkers(t, ctx, s, name, fastOptions("m1"))
	fr := openFrontier(t, ctx, s, name)
	n, err := fr.Records.Lengths(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func openFrontier(t *testing.T, ctx context.Context, s *redistest.Server, name string) *frontier.Frontier {
	t.Helper()
	stored, err := settings.Load(ctx, s.Client, name)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := crawl.OpenFrontier(ctx, s.Client, name, stored)
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

// Reader A of a group killed with records given to it and not
// acknowledged (37 of them, as the issue's), on a crawl that is done:
// reader B of the group does not finish while they wait on A; it says on
// whom they wait, takes them over once they have waited ClaimAfter, and
// delivers every record of the crawl.
func TestAReaderTakesOverWhatADeadReaderLeftBeforeItIsDone(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		site, err := testsite.Start(testsite.Config{Hosts: 2, Pages: 40, ListenBase: "127.0.0.94"})
		if err != nil {
			t.Fatal(err)
		}
		defer site.Close()
		set := settings.Default()
		set.Rate, set.AllowPrivate = math.Inf(1), true
		seedSite(t, s, site, "dead", set)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		runWorkers(t, ctx, s, "dead", fastOptions("w1"))
		st, err := status.Read(ctx, s.Client, "dead")
		if err != nil {
			t.Fatal(err)
		}
		total := int(st.Counters["records"])
		fr := openFrontier(t, ctx, s, "dead")
		if err := fr.Records.JoinGroup(ctx, "g"); err != nil {
			t.Fatal(err)
		}
		// A is given 37 records and dies before acknowledging any.
		if ds, err := fr.Records.ReadGroup(ctx, "g", "A", false, 37); err != nil || len(ds) == 0 {
			t.Fatalf("A's read: %d, %v", len(ds), err)
		}
		var said []string
		var out bytes.Buffer
		rep, err := admin.ExportGroupWith(ctx, s.Client, "dead", "g", "B", &out, admin.GroupOptions{ClaimAfter: 300 * time.Millisecond,
			Say: func(why string) { said = append(said, why) }})
		if err != nil || !rep.Done {
			t.Fatalf("B: %+v, %v", rep, err)
		}
		got := map[string]int{}
		streamIDs(t, out.String(), got)
		if len(got) != total {
			t.Errorf("B delivered %d of the crawl's %d records", len(got), total)
		}
		if len(said) == 0 || !strings.Contains(said[0], "not acknowledged: A (") {
			t.Errorf("B said %q; want it to say the records wait on A", said)
		}
		if p, err := fr.Records.Pending(ctx, "g"); err != nil || len(p) != 0 {
			t.Errorf("pending after B: %v, %v; want none", p, err)
		}
	})
}
