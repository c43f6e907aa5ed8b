package frontier

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
