package crawl

import (
	"net/http"
	"time"

	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/recrawl"
)

// Revisits: what a fetch leaves for the URL's next one, and when that is.
//
// The schedule is Nutch's AdaptiveFetchSchedule: a page's interval starts
// at --revisit (a day without it), shrinks by a fifth each time a visit
// finds it changed and grows by two fifths each time it did not, within
// --revisit-min and --revisit-max; so a page that changes at every visit
// is soon fetched about every --revisit-min, one that never changes about
// every --revisit-max. A page answered 404 or 410 on GoneAfter revisits in
// a row is taken off the schedule: gone.

// Changes: how a fetched page compares with its last fetch, in records
// ("change") and counted crawl-wide ("change:new" …).
const (
	ChangeNew       = "new"       // its first fetch
	ChangeChanged   = "changed"   // refetched, and its content is not what it was
	ChangeUnchanged = "unchanged" // refetched: 304 Not Modified, or the same payload digest
	ChangeGone      = "gone"      // refetched: 404 or 410 (it had been there)
)

// GoneAfter revisits in a row answered 404 or 410 take a page off the
// schedule.
const GoneAfter = 3

// The adaptive schedule's rates (Nutch's defaults).
const (
	shrinkRate = 0.2 // a changed page's interval × (1 - shrinkRate)
	growRate   = 0.4 // an unchanged page's × (1 + growRate)
)

// nextInterval is the schedule's interval after a visit that found the
// page changed or not (prev 0: the first visit).
func nextInterval(s settings.Settings, prev time.Duration, change string) time.Duration {
	first, lo, hi := s.RevisitBounds()
	switch {
	case prev <= 0:
		return first
	case change == ChangeChanged:
		prev = time.Duration(float64(prev) * (1 - shrinkRate))
	case change == ChangeUnchanged:
		prev = time.Duration(float64(prev) * (1 + growRate))
	}
	return min(max(prev, lo), hi).Round(time.Second)
}

// validators are what a refetch asks with.
func validators(v *recrawl.Visit) fetch.Validators {
	if v == nil {
		return fetch.Validators{}
	}
	return fetch.Validators{ETag: v.ETag, LastModified: v.LastModified}
}

// revisitOutcome fills in what a fetched page leaves for its next fetch:
// rec's change, o's visit and due time. last is the visit the fetch was
// made with (nil: its first); digest the payload digest of the answer
// (archived or not), ref where the content it had is archived whole.
func revisitOutcome(s settings.Settings, last *recrawl.Visit, rec *Record, o *frontier.Outcome, digest string, ref *recrawl.Visit) {
	next := recrawl.Visit{Status: rec.Status}
	if last != nil {
		next = *last
		next.Status = rec.Status
	}
	change := ChangeNew
	switch {
	case rec.Status == http.StatusNotModified && last != nil:
		change = ChangeUnchanged // the validators and the archived content stay
		if e := rec.Headers["etag"]; e != "" {
			next.ETag = e
		}
	case (rec.Status == http.StatusNotFound || rec.Status == http.StatusGone) && last != nil && (last.Status < 400 || last.Gone > 0):
		change = ChangeGone // it had been there
		next.Gone++
	default:
		if last != nil {
			change = ChangeChanged
			if last.Digest != "" && digest == last.Digest {
				change = ChangeUnchanged
			}
		}
		next.Gone, next.ETag, next.LastModified = 0, rec.Headers["etag"], rec.Headers["last-modified"]
		if change != ChangeUnchanged {
			next.Digest, next.RefURI, next.RefDate = digest, "", 0 // not archived (yet)
		}
	}
	if ref != nil && (change == ChangeNew || change == ChangeChanged || next.RefDate == 0) {
		next.RefURI, next.RefDate = ref.RefURI, ref.RefDate
	}
	rec.Change = change
	interval := nextInterval(s, time.Duration(next.Interval)*time.Second, change)
	next.Interval = int64(interval / time.Second)
	if !s.KeepVisits {
		return // counted as a change, kept for nothing
	}
	o.Visit, o.Due = &next, interval
	if next.Gone >= GoneAfter {
		o.Due = frontier.NotDue
	}
}
