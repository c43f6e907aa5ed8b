package crawl

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/politeness"
)

// endLoops are fetch loops whose ends land in a channel the test reads:
// up to maxAttempts 3, a page budget of budget (0: none) of which spent
// are fetched.
func endLoops(t *testing.T, budget, spent int64) (*fetchLoops, chan entry, *[]error) {
	t.Helper()
	s := settings.Default()
	s.MaxPages = budget
	lv, err := newLive(s)
	if err != nil {
		t.Fatal(err)
	}
	pl := &fetchLoops{cur: &atomic.Pointer[live]{}, maxAttempts: 3, counters: &Counters{}, pages: &atomic.Int64{},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: newMetrics(&Worker{robots: &politeness.Robots{}})}
	pl.cur.Store(lv)
	pl.pages.Store(spent)
	entries := make(chan entry, 4)
	pl.ex = &exchanger{entries: entries}
	var fatal []error
	pl.fail = func(err error) {
		if len(entries) == 0 {
			t.Error("the worker was stopped before its URL was handed back")
		}
		fatal = append(fatal, err)
	}
	return pl, entries, &fatal
}

// Every end a fetch loop decides reaches the exchanger as one entry, the
// one that end means: what process decides is what the next exchange
// sends.
func TestEachEndHandsTheExchangerItsOneEntry(t *testing.T) {
	tried := Record{URL: "http://a.example/p", Status: 503, Attempt: 1}
	cases := []struct {
		name           string
		attempts       int   // the item's, before this try
		budget, spent  int64 // the page budget, and the pages fetched
		e              end
		back           bool          // given back (no outcome)
		late           time.Duration // given back: how late
		stat, errWords string        // finished: its stat, and words of its record's error
		putBack        *frontier.PutBack
		minAfter       time.Duration // a retry's put-back: at least
	}{
		{name: "finished", e: finish(tried, frontier.Outcome{Stat: OutcomeOK, Fetched: true}), stat: OutcomeOK},
		{name: "failed", e: failed(Record{URL: "http://a.example/p"}, "not a URL", frontier.Outcome{Refund: true}),
			stat: OutcomeFailed, errWords: "not a URL"},
		{name: "retried", e: retry(tried, "HTTP 503", 10*time.Second), putBack: &frontier.PutBack{Deferred: true}, minAfter: 10 * time.Second},
		{name: "retried, its back-off longer than the server asked", attempts: 1, e: retry(tried, "HTTP 503", 0),
			putBack: &frontier.PutBack{Deferred: true}, minAfter: time.Second}, // half the 2 s step
		{name: "retried its last time", attempts: 2, e: retry(tried, "HTTP 503", 0), stat: OutcomeFailed, errWords: "HTTP 503 (gave up after 3 attempts)"},
		{name: "retried with the budget spent", budget: 5, spent: 5, e: retry(tried, "HTTP 503", 0), stat: OutcomeFailed,
			errWords: "HTTP 503 (not retried: the page budget is spent)"},
		{name: "retried within the budget", budget: 5, spent: 4, e: retry(tried, "HTTP 503", 0), putBack: &frontier.PutBack{Deferred: true}},
		{name: "requeued", e: requeue(7 * time.Second), putBack: &frontier.PutBack{After: 7 * time.Second}},
		{name: "deferred", e: end{how: deferred, wait: 2 * time.Second}, putBack: &frontier.PutBack{Deferred: true, After: 2 * time.Second}},
		{name: "given back", e: end{how: givenBack}, back: true},
		{name: "missed", e: end{how: missed, wait: 3 * time.Second}, back: true, late: 3 * time.Second},
		{name: "not ended (never returned)", e: end{}, back: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pl, entries, _ := endLoops(t, c.budget, c.spent)
			l := &frontier.Lease{ID: "l1", Item: frontier.Item{URL: "http://a.example/p", Attempts: c.attempts}}
			pl.end(l, c.e)
			if len(entries) != 1 {
				t.Fatalf("%d entries handed in; want 1", len(entries))
			}
			got := <-entries
			if got.lease() != l {
				t.Fatalf("the entry ends lease %v; want %v", got.lease(), l)
			}
			o := got.page.Outcome
			switch {
			case c.back:
				if got.back == nil || got.late != c.late {
					t.Fatalf("entry %+v; want given back, %v late", got, c.late)
				}
			case c.putBack != nil:
				pb := o.PutBack
				if pb == nil || pb.Deferred != c.putBack.Deferred || c.putBack.After > 0 && pb.After != c.putBack.After ||
					pb.After < c.minAfter || o.Record != nil {
					t.Fatalf("put back %+v (record %s); want %+v, after at least %v, no record", pb, o.Record, c.putBack, c.minAfter)
				}
			default:
				var rec Record
				if err := json.Unmarshal(o.Record, &rec); err != nil {
					t.Fatalf("record %q: %v", o.Record, err)
				}
				if o.PutBack != nil || o.Stat != c.stat || rec.Outcome != c.stat || !strings.Contains(rec.Error, c.errWords) ||
					c.stat == OutcomeFailed && o.Failed != rec.Error {
					t.Fatalf("finished %+v with record %+v; want stat %s, error with %q", o, rec, c.stat, c.errWords)
				}
				if c.e.how == retried && o.Fetched != (tried.Status != 0) {
					t.Fatalf("a try answered %d finished with Fetched %v", tried.Status, o.Fetched)
				}
			}
		})
	}
}

// An end with a fatal error (the archive cannot be written) hands its URL
// back first, then stops the worker: nothing is lost by stopping.
func TestAFatalEndHandsTheURLBackThenStops(t *testing.T) {
	pl, entries, fatal := endLoops(t, 0, 0)
	e := unarchived(errors.New("disk full"))
	pl.end(&frontier.Lease{ID: "l1", Item: frontier.Item{URL: "http://a.example/p"}}, e)
	if len(*fatal) != 1 || !strings.Contains((*fatal)[0].Error(), "cannot write the WARC archive") || (*fatal)[0] != e.fatal {
		t.Fatalf("stopped with %v; want once with %v", *fatal, e.fatal)
	}
	if got := <-entries; got.page.Outcome.PutBack == nil {
		t.Fatalf("entry %+v; want the URL put back", got)
	}
}
