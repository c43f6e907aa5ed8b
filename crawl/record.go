package crawl

import (
	"encoding/json"
	"io"
	"time"

	"github.com/redcrawl/crawler/archive"
)

// Record is one fetched (or skipped) URL, as the results stream, export and
// --out give it.
type Record struct {
	URL         string    `json:"url"`
	Status      int       `json:"status"`
	ContentType string    `json:"content_type,omitempty"`
	Bytes       int64     `json:"bytes"`
	Truncated   bool      `json:"truncated,omitempty"`
	Title       string    `json:"title,omitempty"`
	Depth       int       `json:"depth"`
	Links       int       `json:"links"`
	NewLinks    int       `json:"new_links"`
	FetchMS     int64     `json:"fetch_ms"`
	Redirect    string    `json:"redirect,omitempty"`
	Error       string    `json:"error,omitempty"`
	Worker      string    `json:"worker"`
	FetchedAt   time.Time `json:"fetched_at"` // when the request went out (after politeness waits)
	// With WARC on: where the response record is, and its payload digest.
	WARC          *archive.Location `json:"warc,omitempty"`
	PayloadDigest string            `json:"payload_digest,omitempty"`
}

// recordWriter appends records to a worker's --out as JSON lines. Only the
// exchanger writes, once a record's page is safely in Redis.
type recordWriter struct {
	w    io.Writer
	logf func(format string, args ...any)
}

func (r *recordWriter) write(rec Record) {
	b, err := json.Marshal(rec)
	if err == nil {
		_, err = r.w.Write(append(b, '\n'))
	}
	if err != nil {
		r.logf("--out: %v", err)
	}
}
