package frontier

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/frontier/recrawl"
)

// Outcomes: one word for how a URL ended, the same in records (their
// "outcome"), in the crawl's counters (Outcome.Stat, Stats) and in a
// worker's exit line. They are here, not in package crawl, because the
// sweep ends URLs itself: with a page budget spent, each URL still waiting
// for a retry gets an OutcomeFailed record (SweptRecord) and counter.
const (
	OutcomeOK        = "ok"         // fetched; the answer's status is below 400
	OutcomeHTTPError = "http_error" // fetched; the server answered 4xx (429 and 5xx are retried, then failed)
	OutcomeFailed    = "failed"     // no usable answer: a permanent error, or given up after retries
	OutcomeSkipped   = "skipped"    // not fetched, by rule: robots.txt disallows it, or the page budget is spent
	// OutcomeUnchanged: refetched with its last validators, and answered
	// 304 Not Modified (no body, so no links).
	OutcomeUnchanged = "unchanged"
)

// SweptRecord is the record the sweep writes for a URL it ends (schedule.lua
// builds it with cjson): the fields by which package crawl's records name
// the same facts, and nothing else of them.
type SweptRecord struct {
	URL     string `json:"url"`
	Depth   int    `json:"depth"`
	Parent  string `json:"parent,omitempty"`
	Attempt int    `json:"attempt"`
	Outcome string `json:"outcome"` // OutcomeFailed
	Error   string `json:"error"`
}

// Outcome is how a page ended.
type Outcome struct {
	Children []Item   // links to queue (deduplicated in the same script)
	Stat     string   // the stats counter to bump: an outcome word (OutcomeOK …); "" for none
	Status   int      // the HTTP status the page was answered with: counted as "status:NNN"; 0 for none
	Change   string   // how the page compares with its last fetch (new, changed …): counted as "change:WORD"; "" for none
	Also     []string // more stats counters to bump by one (words without commas)
	Record   []byte   // result record (JSON) for the results stream; nil for none
	Failed   string   // reason to keep the item on the failed list; "" for none
	Fetched  bool     // a page was fetched (counts against the page budget)
	// Refund: no request went to the host (disallowed, skipped before the
	// fetch), so the token its pop took goes back to the host's bucket.
	Refund bool
	// FetchTime is how long the page's fetch took (0: none), for adaptive
	// politeness (Options.DelayFactor).
	FetchTime time.Duration
	// Visit is what this fetch leaves for the URL's next one (nil: keep
	// nothing), and Due when that is (from now; NotDue: never again).
	// Written with the record, in the same atomic step (frontier/recrawl).
	Visit *recrawl.Visit
	Due   time.Duration
	// PutBack, when set, ends the lease with no page: its URL goes back
	// (a retry deferred, a busy host's URL requeued), in the exchange that
	// ends the lease, so that the worker's fetch loops end every lease
	// through the one call. The fields above are then zero.
	PutBack *PutBack
}

// PutBack is how a lease ended with no page sends its URL back: to the
// deferred set, due After from now (Retry), or to the front of its host's
// queue, the host not offered to any worker for After (Requeue).
type PutBack struct {
	Deferred bool
	After    time.Duration
	entry    string // the element stored: a retry's item; "" for the lease's own
}

// Retry puts a leased URL back as item (its attempts and errors counted),
// due after from now: a transient failure's back-off, or the server's
// Retry-After. Never dropped, never busy-looped.
func Retry(item Item, after time.Duration) (*PutBack, error) {
	e, err := entry(item)
	if err != nil {
		return nil, err
	}
	return &PutBack{Deferred: true, After: after, entry: e}, nil
}

// Requeue puts a leased URL back at the front of its host's queue,
// unchanged, and keeps the host from being offered for wait: the host is
// busy (paused by a 429 or a 503, its Crawl-delay learnt after the pop).
func Requeue(wait time.Duration) *PutBack { return &PutBack{After: wait} }

// counters are the stats fields the outcome bumps, comma-separated.
func (o Outcome) counters() string {
	c := o.Stat
	if o.Status != 0 {
		c += ",status:" + strconv.Itoa(o.Status)
	}
	if o.Change != "" {
		c += ",change:" + o.Change
	}
	for _, a := range o.Also {
		c += "," + a
	}
	return strings.TrimPrefix(c, ",")
}

// Finished is a lease ended with its page's outcome.
type Finished struct {
	Lease   *Lease
	Outcome Outcome
}

// NotDue, as Outcome.Due, takes the URL off the schedule: it is not
// revisited (gone for good).
const NotDue = time.Duration(-1)

// dueMember is the due set's member that the outcome o of the URL of l
// puts in: "" when it keeps no visit, or takes the URL off the schedule.
func dueMember(l *Lease, o Outcome) string {
	if o.Visit == nil || o.Due < 0 {
		return ""
	}
	it := Item{URL: l.Item.URL, Depth: l.Item.Depth, Priority: l.Item.Priority}
	el, ok := compact(it, l.Host)
	if !ok || it.Priority != 0 { // the priority rides in the item's JSON: the revisit keeps its level
		b, _ := json.Marshal(it) // strings and numbers: cannot fail
		el = string(b)
	}
	return l.Host + "\n" + el + "\n" + o.Visit.Encode()
}
