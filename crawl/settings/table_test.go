package settings

import (
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/redcrawl/crawler/parse"
)

// The table declares every field of Settings, each once, with a flag and
// help of its own (but Instance, the crawl's id, which no one sets); a
// crawl seeded before a setting existed reads it as what it ran with.
func TestSettingTableDeclaresEverySettingOnce(t *testing.T) {
	var s Settings
	fields := map[uintptr]string{}
	flags := map[string]bool{}
	for _, st := range Table {
		p := reflect.ValueOf(st.ptr(&s)).Pointer()
		if other, dup := fields[p]; dup {
			t.Errorf("%s and %s are the same struct field", st.Field, other)
		}
		fields[p] = st.Field
		if st.Flag == "" || st.Usage == "" || flags[st.Flag] {
			t.Errorf("%s: flag %q (twice: %v), usage %q", st.Field, st.Flag, flags[st.Flag], st.Usage)
		}
		flags[st.Flag] = true
	}
	for _, f := range []string{"Instance", "Version"} {
		if _, ok := reflect.TypeOf(s).FieldByName(f); !ok {
			t.Fatalf("Settings has no %s: the count below is off by one", f)
		}
	}
	if n := reflect.TypeOf(s).NumField() - 2; len(fields) != n {
		t.Fatalf("the table declares %d of Settings' %d fields (Instance and Version aside)", len(fields), n)
	}
}

// Every setting goes to Redis and back unchanged, each set away from its
// default; status --json shows each under its name, of its own type.
func TestSettingsRoundTripThroughTheTable(t *testing.T) {
	s := Default()
	s.Scope, s.MaxDepth, s.MaxPages, s.Rate, s.Burst = parse.ScopeDomain, 7, 500, math.Inf(1), 3
	s.UserAgent, s.ExpectedURLs, s.FPRate, s.AllowPrivate = "TestBot/1.0", 5000, 0.01, true
	s.RobotsGiveUp, s.KeepTypes, s.Extract = 90*time.Second, []string{"text/html", "image/*"}, []string{"title=h1", "lead=p.lead"}
	s.Allow, s.Deny, s.Headers = []string{"^https://a/"}, []string{"/private/"}, []string{"X-A: 1", "X-B: 2"}
	s.MaxPathRepeat, s.MaxPathDepth, s.MaxQueryParams, s.MaxURLLength = 2, 8, 1, 300
	s.Sitemaps, s.MaxPagesPerHost, s.KeepTrackingParams, s.Shards = false, 10, true, 4
	got, err := fromHash(s.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, s)
	}
	js := s.Typed()
	if js["rate"] != nil || js["robots_give_up_seconds"] != 90.0 || js["max_pages"] != int64(500) || js["scope"] != "domain" {
		t.Fatalf("status --json: rate %v, robots_give_up_seconds %v, max_pages %v, scope %v", js["rate"], js["robots_give_up_seconds"], js["max_pages"], js["scope"])
	}
	if len(js) != len(Table) {
		t.Fatalf("status --json has %d settings; want %d", len(js), len(Table))
	}
	old := Default().Hash()
	for _, f := range []string{"robots_give_up", "keep_types", "max_path_repeat", "sitemaps", "max_pages_per_host", "shards"} {
		delete(old, f)
	}
	back, err := fromHash(old)
	if err != nil || back.MaxPagesPerHost != 0 || back.Shards != 1 || !back.Sitemaps || back.RobotsGiveUp != 30*time.Minute {
		t.Fatalf("a crawl seeded before those settings: %+v, %v; want them as it ran (no host cap, 1 shard, sitemaps, 30 min)", back, err)
	}
}
