// Package archive keeps what a worker fetched in WARC 1.1 files, the
// format web archives and their tools read (ISO 28500), through
// github.com/nlnwa/gowarc/v3, a maintained library that builds, digests,
// compresses, rotates and reads WARC files.
//
// Each fetch becomes two records, written one after the other: a request and a
// response, each with the bytes as they crossed the wire
// (fetch.Config.Capture), linked by WARC-Concurrent-To, with
// WARC-Target-URI, WARC-Date (when the fetch started), WARC-IP-Address,
// and SHA-1 block and payload digests in base32. A response cut at the
// body limit carries WARC-Truncated: length.
//
// Files are gzip-compressed record by record, begin with a warcinfo
// record, and are named after the IIPC recommendation,
// PREFIX-TIMESTAMP-SERIAL-WORKER.warc.gz: the worker's id makes names
// unique across the machines of a crawl. A file being written ends in
// ".open" until Close renames it, so a file without that suffix is
// complete; each record is compressed and written whole before the next,
// so after a kill -9 every record before the cut still reads.
//
// A write that fails (a full disk) leaves a torn record at the end of its
// file, and the writer refuses every write after it, as the pages it would
// hold go back to the crawl. When that file is closed it is cut back to its
// last whole exchange (a request whose response was torn goes too) and the
// cut is logged, so a file without ".open" still holds only whole records.
package archive

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/fetch"
)

// Config says where and how to write.
type Config struct {
	Dir      string       // the directory for the files (created if missing)
	Prefix   string       // the files' name prefix (default "redcrawl")
	Worker   string       // the worker's id, part of every file name
	MaxSize  int64        // a file is closed and another begun past this size (default 1 GiB)
	Software string       // the crawler and its version, for the warcinfo record
	Crawl    string       // the crawl's name, for the warcinfo record
	Agent    string       // the User-Agent sent, for the warcinfo record
	Log      *slog.Logger // where a torn file's cut is said (default slog.Default())
	// Closed, when set, is told each file once it is closed, renamed and
	// whole (a torn one cut back): a file no write will touch again, to
	// upload (package upload).
	Closed func(path string)
}

// Location is where a response record starts: its file (name only) and the
// byte offset of its gzip member in that file.
type Location struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	// RecordID is the response record's WARC-Record-ID ("<urn:uuid:…>"),
	// for a metadata record that refers to it (MarkDuplicate).
	RecordID string `json:"-"`
	// Revisit is the profile of a revisit record written in the response
	// record's place (ServerNotModified, IdenticalPayloadDigest); "" for a
	// response record.
	Revisit string `json:"revisit,omitempty"`
}

// Exchange is one fetch to archive.
type Exchange struct {
	URL       string
	Started   time.Time // when the fetch started: the records' WARC-Date
	Raw       *fetch.Raw
	Truncated bool // the response's body was cut at the limit
}

// Writer writes exchanges to rotating WARC files. Safe for concurrent use.
type Writer struct {
	w   *gowarc.WarcFileWriter
	log *slog.Logger

	mu     sync.Mutex // held across a write, so a failure is known before the next
	closed bool
	failed error // the first write that failed; every later one is refused

	// cutMu, not mu: closed1 runs in the library's writer, also while a
	// Write holding mu rotates files.
	cutMu sync.Mutex
	cut   map[string]int64 // a file torn by a failed write → where its failed exchange began

	onClosed func(path string) // Config.Closed
}

// ErrClosed: Write after Close.
var ErrClosed = errors.New("archive: writer closed")

// ErrFailed: Write after a write failed. What an archive holds after a
// failed write is not known record by record, so nothing more is added.
var ErrFailed = errors.New("archive: an earlier write failed")

var recordOptions = []gowarc.WarcRecordOption{
	gowarc.WithAddMissingDigest(true),
	gowarc.WithDefaultDigestAlgorithm("sha1"),
	gowarc.WithDefaultDigestEncoding(gowarc.Base32),
}

// Open prepares a Writer; its first file is created with the first Write.
func Open(cfg Config) (*Writer, error) {
	if cfg.Dir == "" {
		return nil, errors.New("archive: no directory given")
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	// Writable? Found now rather than at the first page.
	probe, err := os.CreateTemp(cfg.Dir, ".redcrawl-probe-*")
	if err != nil {
		return nil, fmt.Errorf("archive: the WARC directory is not writable: %w", err)
	}
	probe.Close()
	os.Remove(probe.Name())
	if cfg.Prefix == "" {
		cfg.Prefix = "redcrawl"
	}
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = 1 << 30
	}
	names := &gowarc.PatternNameGenerator{
		Directory: cfg.Dir,
		Prefix:    cfg.Prefix,
		Pattern:   "%{prefix}s-%{ts}s-%05{serial}d-%{worker}s.%{ext}s",
		Params:    map[string]any{"worker": FileSafe(cfg.Worker)},
	}
	info := fmt.Sprintf("software: %s\r\nformat: WARC File Format 1.1\r\n"+
		"conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n"+
		"isPartOf: %s\r\nhttp-header-user-agent: %s\r\nrobots: obey\r\n", cfg.Software, cfg.Crawl, cfg.Agent)
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	a := &Writer{log: cfg.Log, cut: map[string]int64{}, onClosed: cfg.Closed}
	w := gowarc.NewWarcFileWriter(
		gowarc.WithFileNameGenerator(names),
		gowarc.WithMaxFileSize(cfg.MaxSize),
		gowarc.WithCompression(true),
		gowarc.WithAddWarcConcurrentToHeader(true),
		gowarc.WithRecordOptions(recordOptions...),
		gowarc.WithWarcInfoFunc(func(rb gowarc.WarcRecordBuilder) error {
			_, err := rb.WriteString(info)
			return err
		}),
		gowarc.WithAfterFileCreationHook(a.closed1),
	)
	a.w = w
	return a, nil
}

// closed1 runs as each file is closed and renamed, given the length of the
// records the library wrote whole. A file longer than that, or one a
// failed exchange began in, is cut back to its whole exchanges.
func (w *Writer) closed1(path string, whole int64, _ string) error {
	w.cutMu.Lock()
	at, torn := w.cut[filepath.Base(path)]
	w.cutMu.Unlock()
	if !torn {
		at = whole
	}
	at = min(at, whole)
	fi, err := os.Stat(path)
	if err != nil || fi.Size() <= at {
		w.done(path, err == nil)
		return nil
	}
	if at == 0 { // not even its warcinfo record is whole
		if err := os.Remove(path); err != nil {
			return err
		}
		w.log.Warn("WARC file torn by a failed write before its first whole record: removed", "file", path)
		return nil
	}
	if err := os.Truncate(path, at); err != nil {
		w.log.Error("WARC file torn by a failed write, and cutting it back failed: its last record is incomplete",
			"file", path, "whole_bytes", at, "err", err)
		return err
	}
	w.log.Warn("WARC file torn by a failed write: cut back to its last whole record",
		"file", path, "bytes", at, "dropped_bytes", fi.Size()-at)
	w.done(path, true)
	return nil
}

// done tells Config.Closed of a closed file that exists.
func (w *Writer) done(path string, exists bool) {
	if exists && w.onClosed != nil {
		w.onClosed(path)
	}
}

// FileSafe keeps a worker id usable in a file name on any system.
func FileSafe(id string) string {
	if id == "" {
		id = "worker"
	}
	return strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' {
			return r
		}
		return '-'
	}, id)
}

// Write archives one exchange: its request and response records, in that
// order (a file rotated between them leaves them in two files, still
// linked by their ids). It returns where the response record is and its
// payload digest ("sha1:BASE32").
func (w *Writer) Write(ex Exchange) (Location, string, error) {
	return w.Archive(ex, nil)
}

// Archive is Write, but once the response's payload digest is known,
// revisit (when not nil) may say the response is one archived before:
// then a revisit record, which keeps the response's headers and refers to
// that earlier response, takes the response record's place (revisit.go).
// The Location then says which profile it has.
func (w *Writer) Archive(ex Exchange, revisit func(digest string) *Revisit) (Location, string, error) {
	if ex.Raw == nil {
		return Location{}, "", errors.New("archive: no captured bytes to write")
	}
	var digest, id, profile string
	res, err := w.write(func() ([]gowarc.WarcRecord, error) {
		req, err := record(gowarc.Request, "application/http;msgtype=request", ex, ex.Raw.Request, false)
		if err != nil {
			return nil, err
		}
		resp, err := record(gowarc.Response, "application/http;msgtype=response", ex, ex.Raw.Response, ex.Truncated)
		if err != nil {
			req.Close()
			return nil, err
		}
		digest, id = resp.WarcHeader().Get(gowarc.WarcPayloadDigest), resp.WarcHeader().Get(gowarc.WarcRecordID)
		if revisit != nil {
			if r := revisit(digest); r != nil {
				rv, err := r.of(resp)
				resp.Close()
				if err != nil {
					req.Close()
					return nil, fmt.Errorf("archive: revisit record for %s: %w", ex.URL, err)
				}
				resp, id, profile = rv, rv.WarcHeader().Get(gowarc.WarcRecordID), r.Profile
			}
		}
		return []gowarc.WarcRecord{req, resp}, nil
	})
	if err != nil {
		return Location{}, "", err
	}
	name := res[1].FileName
	if i := strings.LastIndexByte(name, os.PathSeparator); i >= 0 {
		name = name[i+1:]
	}
	return Location{File: strings.TrimSuffix(name, ".open"), Offset: res[1].FileOffset, RecordID: id, Revisit: profile}, digest, nil
}

// libMu is held while records are built and written, by every Writer of
// the process: gowarc's record builder sets a package-level flag of
// github.com/google/uuid each time one is made, and reads it for each
// record id, also in its own goroutine for a new file's warcinfo record.
// Built and written under one lock, with the library's channel hand-off
// between, those accesses are ordered rather than racing. (A worker has
// one Writer; the library writes a Writer's records one at a time anyway.)
var libMu sync.Mutex

// write builds records and writes them one after the other, unless the
// writer is closed or an earlier write failed. A failure is
// kept, and where the records began noted for their files' cut
// (closed1): they go whole, wherever they landed (a request without its
// response is no use to a reader).
func (w *Writer) write(build func() ([]gowarc.WarcRecord, error)) ([]gowarc.WriteResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.closed:
		return nil, ErrClosed
	case w.failed != nil:
		return nil, fmt.Errorf("%w: %w", ErrFailed, w.failed)
	}
	libMu.Lock()
	records, err := build()
	if err != nil {
		libMu.Unlock()
		return nil, err
	}
	res := w.w.Write(records...)
	libMu.Unlock()
	for _, r := range records {
		r.Close()
	}
	if len(res) != len(records) {
		return nil, ErrClosed
	}
	for _, r := range res {
		if r.Err != nil && w.failed == nil {
			w.failed = r.Err
		}
	}
	if w.failed == nil {
		return res, nil
	}
	w.cutMu.Lock()
	for _, r := range res {
		if r.FileName == "" {
			continue
		}
		name := filepath.Base(r.FileName)
		if at, ok := w.cut[name]; !ok || r.FileOffset < at {
			w.cut[name] = r.FileOffset
		}
	}
	w.cutMu.Unlock()
	return nil, fmt.Errorf("archive: %w", w.failed)
}

func record(t gowarc.RecordType, contentType string, ex Exchange, block []byte, truncated bool) (gowarc.WarcRecord, error) {
	rb := gowarc.NewRecordBuilder(t, recordOptions...)
	if _, err := rb.Write(block); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	rb.AddWarcHeader(gowarc.WarcTargetURI, ex.URL)
	rb.AddWarcHeaderTime(gowarc.WarcDate, ex.Started)
	rb.AddWarcHeader(gowarc.ContentType, contentType)
	if ex.Raw.RemoteIP != "" {
		rb.AddWarcHeader(gowarc.WarcIPAddress, ex.Raw.RemoteIP)
	}
	if truncated {
		rb.AddWarcHeader(gowarc.WarcTruncated, "length")
	}
	r, _, err := rb.Build()
	if err != nil {
		return nil, fmt.Errorf("archive: %s record for %s: %w", t, ex.URL, err)
	}
	return r, nil
}

// Close finishes the current file (it loses its ".open" suffix); writes
// after Close fail with ErrClosed. Closing again does nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	was := w.closed
	w.closed = true
	w.mu.Unlock()
	if was {
		return nil
	}
	err := w.w.Close() // each file's closed1 runs in here, unlocked
	w.mu.Lock()
	failed := w.failed
	w.mu.Unlock()
	if failed != nil {
		// Said whether or not a file was torn: a write that failed at a
		// record's start tore nothing, and closed1 had nothing to cut.
		w.log.Warn("WARC archiving stopped at a failed write; the files hold whole records only", "err", failed)
	}
	return err
}
