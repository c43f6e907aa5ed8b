package crawl

import (
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/recrawl"
)

// The schedule learns: a page that changes at every visit comes down to
// --revisit-min, one that never changes goes up to --revisit-max, each by
// Nutch's rates, and the first interval is --revisit.
func TestTheScheduleShrinksForChangesAndGrowsWithout(t *testing.T) {
	s := settings.Default()
	s.Revisit, s.RevisitMin, s.RevisitMax = 100*time.Second, 10*time.Second, 1000*time.Second
	if got := nextInterval(s, 0, ChangeNew); got != 100*time.Second {
		t.Fatalf("first interval %v; want --revisit", got)
	}
	if got := nextInterval(s, 100*time.Second, ChangeChanged); got != 80*time.Second {
		t.Errorf("after a change %v; want 80s", got)
	}
	if got := nextInterval(s, 100*time.Second, ChangeUnchanged); got != 140*time.Second {
		t.Errorf("after no change %v; want 140s", got)
	}
	hot, cold := 100*time.Second, 100*time.Second
	for range 30 {
		hot, cold = nextInterval(s, hot, ChangeChanged), nextInterval(s, cold, ChangeUnchanged)
	}
	if hot != 10*time.Second || cold != 1000*time.Second {
		t.Errorf("after 30 visits: %v for a page that always changed, %v for one that never did; want the bounds", hot, cold)
	}
	var d settings.Settings = settings.Default()
	if first, lo, hi := d.RevisitBounds(); first != 24*time.Hour || lo != 144*time.Minute || hi != 720*time.Hour {
		t.Errorf("default bounds %v %v %v", first, lo, hi)
	}
	s.RevisitMin = 2000 * time.Second
	if s.Validate() == nil {
		t.Error("a minimum above the maximum was accepted")
	}
}

func outcomeOf(t *testing.T, s settings.Settings, last *recrawl.Visit, status int, headers map[string]string, digest string, ref *recrawl.Visit) (Record, frontier.Outcome, recrawl.Visit) {
	t.Helper()
	rec := Record{Status: status, Headers: headers}
	var o frontier.Outcome
	revisitOutcome(s, last, &rec, &o, digest, ref)
	if o.Visit == nil {
		t.Fatal("no visit kept")
	}
	// What the next fetch reads back, through the due set's encoding.
	v := recrawl.Decode(o.Visit.Encode())
	if v == nil {
		t.Fatalf("visit %+v encodes as nothing", o.Visit)
	}
	return rec, o, *v
}

// What a fetch leaves for the next one, by how it compares with the last.
func TestAVisitKeepsValidatorsDigestAndWhereTheContentIs(t *testing.T) {
	s := settings.Default()
	s.Revisit, s.RevisitMin, s.RevisitMax = 100*time.Second, 10*time.Second, 1000*time.Second
	rec, o, v := outcomeOf(t, s, nil, 200, map[string]string{"etag": `"a"`, "last-modified": "Mon"}, "sha1:A", &recrawl.Visit{RefDate: 7})
	if rec.Change != ChangeNew || v.ETag != `"a"` || v.LastModified != "Mon" || v.Digest != "sha1:A" || v.RefDate != 7 || v.Interval != 100 || o.Due != 100*time.Second {
		t.Fatalf("first fetch: %s, %+v, due %v", rec.Change, v, o.Due)
	}
	// 304: the validators and the archived content stay; the interval grows.
	rec, _, v2 := outcomeOf(t, s, &v, 304, nil, "sha1:A", nil)
	if rec.Change != ChangeUnchanged || v2.ETag != `"a"` || v2.Digest != "sha1:A" || v2.RefDate != 7 || v2.Interval != 140 {
		t.Fatalf("304: %s, %+v", rec.Change, v2)
	}
	// The same payload again, whole: unchanged, still referring to the first copy.
	rec, _, v3 := outcomeOf(t, s, &v2, 200, map[string]string{"etag": `"a"`}, "sha1:A", &recrawl.Visit{RefDate: 9})
	if rec.Change != ChangeUnchanged || v3.RefDate != 7 || v3.Interval != 196 {
		t.Fatalf("same payload: %s, %+v", rec.Change, v3)
	}
	// New content: its own digest and archived copy; the interval shrinks.
	rec, _, v4 := outcomeOf(t, s, &v3, 200, map[string]string{"etag": `"b"`}, "sha1:B", &recrawl.Visit{RefDate: 11})
	if rec.Change != ChangeChanged || v4.ETag != `"b"` || v4.Digest != "sha1:B" || v4.RefDate != 11 || v4.Interval != 157 {
		t.Fatalf("changed: %s, %+v", rec.Change, v4)
	}
	// New content not archived: no copy to refer to any more.
	_, _, v5 := outcomeOf(t, s, &v4, 200, nil, "sha1:C", nil)
	if v5.RefDate != 0 || v5.Digest != "sha1:C" {
		t.Fatalf("changed, not archived: %+v", v5)
	}
	// Gone: counted, and off the schedule after GoneAfter in a row.
	last := v4
	for i := 1; i <= GoneAfter; i++ {
		rec, o, g := outcomeOf(t, s, &last, 404, nil, "sha1:E", nil)
		if rec.Change != ChangeGone || g.Gone != i || (o.Due == frontier.NotDue) != (i == GoneAfter) {
			t.Fatalf("404 #%d: %s, %+v, due %v", i, rec.Change, g, o.Due)
		}
		last = g
	}
	// A page that was never there is not gone: a 404 the first time is new.
	if rec, _, _ := outcomeOf(t, s, nil, 404, nil, "", nil); rec.Change != ChangeNew {
		t.Fatalf("first 404: %s", rec.Change)
	}
}
