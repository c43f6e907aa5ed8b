package frontier_test

import (
	"context"
	"testing"
	"time"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/recrawl"
	"github.com/redcrawl/crawler/internal/redistest"
)

// A finished crawl keeps each fetched URL's visit; `recrawl` makes the
// schedule's URLs due (all of them with --all), the sweep hands them back
// with their visits, and the crawl ends again once they are fetched.
func TestARecrawlHandsBackWhatWasFetchedWithItsVisit(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		e := setup(t, s)
		e.enqueue(t, []frontier.Item{{URL: "http://a/x", Depth: 3}, {URL: "http://b/"}, {URL: "http://c/"}})
		for range 3 {
			l := pop(t, e.f)
			o := frontier.Outcome{Stat: "ok", Fetched: true, Record: []byte(`{}`)}
			switch l.Item.URL {
			case "http://a/x":
				o.Visit, o.Due = &recrawl.Visit{ETag: `"v1"`, Interval: 3600, LastModified: "Tue, 01 Dec 2026 21:58:57 GMT"}, time.Hour
			case "http://b/":
				o.Visit, o.Due = &recrawl.Visit{Gone: 3}, frontier.NotDue // gone for good: never due
			}
			if held, _ := finish(t, e.f, l, o); !held {
				t.Fatalf("%s: lease not held", l.Item.URL)
			}
		}
		if sw := e.sweep(t, 3, 0); !sw.CrawlOver {
			t.Fatal("the first crawl did not end")
		}
		rv, err := e.f.Visits.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rv.Scheduled != 1 || rv.DueNow != 0 || !rv.RecrawlAt.IsZero() || rv.NextDue <= 59*time.Minute {
			t.Fatalf("revisits %+v; want 1 on the schedule, none due, the next in an hour", rv)
		}
		// Nothing is due by now: the recrawl moves nothing, and the crawl ends again.
		if n, err := e.f.Visits.Recrawl(ctx, false); err != nil || n != 0 {
			t.Fatalf("recrawl = %d, %v; want 0 due", n, err)
		}
		if done, _ := e.f.Done(ctx); done {
			t.Fatal("the done flag stayed after a recrawl")
		}
		if sw := e.sweep(t, 3, 0); !sw.CrawlOver || sw.Revisits != 0 {
			t.Fatalf("sweep %+v; want the crawl over, nothing revisited", sw)
		}
		e.advance(time.Millisecond) // the next recrawl's time is later
		if n, err := e.f.Visits.Recrawl(ctx, true); err != nil || n != 1 {
			t.Fatalf("recrawl --all = %d, %v; want 1 due", n, err)
		}
		sw := e.sweep(t, 3, 0)
		if sw.CrawlOver || sw.Revisits != 1 {
			t.Fatalf("sweep %+v; want 1 revisit, the crawl not over", sw)
		}
		l := pop(t, e.f)
		if l == nil || l.Item.URL != "http://a/x" || l.Item.Depth != 3 {
			t.Fatalf("popped %+v; want http://a/x at depth 3", l)
		}
		if v := recrawl.Decode(l.Item.V); v == nil || v.ETag != `"v1"` || v.Interval != 3600 || v.LastModified != "Tue, 01 Dec 2026 21:58:57 GMT" {
			t.Fatalf("the revisit's visit is %q; want the one its fetch left", l.Item.V)
		}
		if pop(t, e.f) != nil {
			t.Fatal("a URL gone for good, or one without a visit, was handed back")
		}
		finish(t, e.f, l, frontier.Outcome{Stat: "ok", Fetched: true, Visit: &recrawl.Visit{ETag: `"v2"`, Interval: 5040}, Due: time.Hour})
		if sw := e.sweep(t, 3, 0); !sw.CrawlOver {
			t.Fatal("the recrawl did not end once its URL was fetched")
		}
		// The visit it was fetched with is gone; the new one is the only one.
		if m := s.Client.ZRange(ctx, keyspace.KeysFor("t").Due, 0, -1).Val(); len(m) != 1 || m[0] != "a\nh3 /x\n\"v2\"\t\t\t\t\t5040" {
			t.Fatalf("due set %q; want the new visit alone", m)
		}
	})
}

// A continuous crawl hands a URL back once it is due, and never ends.
func TestAContinuousCrawlRevisitsWhatIsDueAndNeverEnds(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		e := setup(t, s)
		e.f.Continuous = true
		e.enqueue(t, []frontier.Item{{URL: "http://a/"}})
		l := pop(t, e.f)
		finish(t, e.f, l, frontier.Outcome{Stat: "ok", Fetched: true, Visit: &recrawl.Visit{Interval: 1}, Due: time.Second})
		for range 2 { // the end takes two sweeps that find nothing to do
			if sw := e.sweep(t, 3, 0); sw.CrawlOver || sw.Revisits != 0 || sw.NextDeferred < 0 || sw.NextDeferred > time.Second {
				t.Fatalf("sweep %+v; want nothing due, the next revisit within a second, the crawl not over", sw)
			}
		}
		if pop(t, e.f) != nil {
			t.Fatal("popped a URL before it was due")
		}
		e.advance(1100 * time.Millisecond)
		if sw := e.sweep(t, 3, 0); sw.Revisits != 1 {
			t.Fatalf("sweep %+v; want the URL due again", sw)
		}
		if l := pop(t, e.f); l == nil || l.Item.URL != "http://a/" || recrawl.Decode(l.Item.V) == nil {
			t.Fatalf("popped %+v; want http://a/ with its visit", l)
		}
	})
}

// A visit survives its encoding, and one with bytes no header has drops them.
func TestAVisitEncodesCompactlyAndBack(t *testing.T) {
	v := recrawl.Visit{ETag: `W/"x-1"`, LastModified: "Tue, 01 Dec 2026 21:58:57 GMT", Digest: "sha1:ABC", RefURI: "http://a/b", RefDate: 1764626337123456789,
		Interval: 86400, Gone: 1, Status: 404}
	enc := v.Encode()
	if got := recrawl.Decode(enc); got == nil || *got != v {
		t.Fatalf("%q decodes as %+v; want %+v", enc, got, v)
	}
	if want := "W/\"x-1\"\t1796162337\tsha1:ABC\thttp://a/b\t1764626337123456789\t86400\t1\t404"; enc != want {
		t.Errorf("encoded as %q; want %q", enc, want)
	}
	odd := recrawl.Visit{ETag: "\"a\tb\"", LastModified: "yesterday", Interval: 5}
	if got := recrawl.Decode(odd.Encode()); got == nil || got.ETag != "" || got.LastModified != "yesterday" || got.Interval != 5 {
		t.Errorf("%+v decodes as %+v", odd, got)
	}
	if recrawl.Decode("") != nil {
		t.Error("an item without a visit decodes as one")
	}
}
