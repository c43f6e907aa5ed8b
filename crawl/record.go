package crawl

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/frontier"
)

// Record is one fetched (or skipped) URL, as the results stream, export and
// --out give it.
type Record struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	// Proto is the HTTP version the answer came in ("HTTP/1.1",
	// "HTTP/2.0", "HTTP/1.0"); with WARC files it is never HTTP/2, which
	// capture turns off (docs/design.md, the archive).
	Proto       string `json:"proto,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Bytes       int64  `json:"bytes"`
	Truncated   bool   `json:"truncated,omitempty"`
	// DroppedBody: the body was not downloaded, its type not being one of
	// the crawl's keep-types.
	DroppedBody bool   `json:"dropped_body,omitempty"`
	Title       string `json:"title,omitempty"`
	Depth       int    `json:"depth"`
	Links       int    `json:"links"`
	// LinksCut: the page had more links than the crawl's max-links; this
	// many past it were left out (CounterLinksCut counts such pages).
	LinksCut int    `json:"links_cut,omitempty"`
	NewLinks int    `json:"new_links"`
	FetchMS  int64  `json:"fetch_ms"`
	Redirect string `json:"redirect,omitempty"`
	Error    string `json:"error,omitempty"`
	Worker   string `json:"worker"`
	// SettingsVersion is the version of the crawl's settings ('crawler
	// set') the response was read under: its links, extract rules,
	// filters and depth (0, as seeded, is left out).
	SettingsVersion int64     `json:"settings_version,omitempty"`
	FetchedAt       time.Time `json:"fetched_at"` // when the request went out (after politeness waits)
	// Outcome is how the URL ended: OutcomeOK, OutcomeHTTPError,
	// OutcomeFailed or OutcomeSkipped (the same words as the crawl's
	// counters and a worker's exit line).
	Outcome string `json:"outcome"`
	Parent  string `json:"parent,omitempty"` // the page that linked to it (none for a seed)
	Attempt int    `json:"attempt"`          // 1 for the first try
	// PreviousErrors are the earlier attempts' errors, oldest first.
	PreviousErrors []string `json:"previous_errors,omitempty"`
	// Headers are the response headers that matter downstream:
	// content-length, last-modified, etag, location.
	Headers map[string]string `json:"headers,omitempty"`
	// Extract holds what the crawl's extract rules found, by name: a
	// string, or a list of strings for a rule of every match (NAME[]=…).
	Extract map[string]any `json:"extract,omitempty"`
	// Change is how the page compares with its last fetch: ChangeNew,
	// ChangeChanged, ChangeUnchanged or ChangeGone (revisit.go); "" for a
	// URL not fetched.
	Change string `json:"change,omitempty"`
	// With WARC on: where the response record is (or the revisit record
	// in its place: warc.revisit names its profile), and its payload digest.
	WARC          *archive.Location `json:"warc,omitempty"`
	PayloadDigest string            `json:"payload_digest,omitempty"`
	// Robots are what the page's owner said of it for crawlers, in
	// X-Robots-Tag headers and robots meta tags addressed to every crawler
	// or to this one: noindex, nofollow, noarchive, nosnippet,
	// unavailable_after=DATE (for a search or archive downstream to honour;
	// nofollow is honoured here: no link of the page is followed).
	Robots []string `json:"robots,omitempty"`
	// NotArchived says why a response read whole was not archived (seed
	// --obey-noarchive: its owner said noarchive).
	NotArchived string `json:"not_archived,omitempty"`
	// Canonical is the other URL of the crawl's scope the page names its
	// canonical (rel=canonical, in its head or a Link header), and
	// DuplicateOf the same when the crawl took the page for a duplicate of
	// it (seed --canonical skip): not archived, its canonical queued in
	// its stead (canonical.go).
	Canonical   string `json:"canonical,omitempty"`
	DuplicateOf string `json:"duplicate_of,omitempty"`
	// NearDuplicateOf is the page of the same host fetched before whose
	// main text this page's is a near copy of (seed --near-duplicates), and
	// NearSimilarity how near: the fraction of their MinHash signatures'
	// values that agree, an estimate of the Jaccard similarity of their
	// two-word shingles (neardup.go).
	NearDuplicateOf string  `json:"near_duplicate_of,omitempty"`
	NearSimilarity  float64 `json:"near_similarity,omitempty"`
	// Render: the page was rendered in a browser, and its links are the
	// rendered DOM's (render.go).
	Render *RenderInfo `json:"render,omitempty"`
	// StreamID, written by export --group only, is the record's place in
	// the results streams ("shard-entry"): the same at every delivery, so
	// that a sink given a record twice (its reader killed between writing
	// and acknowledging) can drop the repeat.
	StreamID string `json:"stream_id,omitempty"`
}

// Outcomes: one word for how a URL ended, the same in records, in the
// crawl's counters (status) and in a worker's exit line (frontier's
// vocabulary, which the sweep writes too).
const (
	OutcomeOK        = frontier.OutcomeOK        // fetched; the answer's status is below 400
	OutcomeHTTPError = frontier.OutcomeHTTPError // fetched; the server answered 4xx (429 and 5xx are retried, then failed)
	OutcomeFailed    = frontier.OutcomeFailed    // no usable answer: a permanent error, or given up after retries
	OutcomeSkipped   = frontier.OutcomeSkipped   // not fetched, by rule: robots.txt disallows it, or the page budget is spent
	OutcomeUnchanged = frontier.OutcomeUnchanged // refetched with validators, answered 304 Not Modified
)

// recordWriter appends records to a worker's --out as JSON lines. Only the
// exchanger writes, once a record's page is safely in Redis. A write that
// fails (a full disk) stops the worker, as a WARC file that cannot be
// written does: a file that silently misses records is worse than a worker
// that stops; the record is still in the results stream.
type recordWriter struct {
	mu     sync.Mutex // the exchanger writes its pages' records, the scheduler its sweeps'
	w      io.Writer
	log    *slog.Logger
	fail   func(error) // stops the worker for good (set by Run)
	broken bool
}

func (r *recordWriter) write(rec Record) {
	b, err := json.Marshal(rec)
	r.writeJSON(rec.URL, b, err)
}

// writeJSON writes a record already in JSON (one the sweep wrote).
func (r *recordWriter) writeJSON(url string, b []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken {
		return
	}
	if err == nil {
		_, err = r.w.Write(append(b, '\n'))
	}
	if err != nil {
		r.broken = true
		err = fmt.Errorf("cannot write --out, stopping (the record of %s and later ones are in the results stream: 'crawler export'): %w", url, err)
		r.log.Error("writing --out failed", "err", err)
		if r.fail != nil {
			r.fail(err)
		}
	}
}
