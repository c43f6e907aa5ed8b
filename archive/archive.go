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
package archive

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/fetch"
)

// Config says where and how to write.
type Config struct {
	Dir      string // the directory for the files (created if missing)
	Prefix   string // the files' name prefix (default "redcrawl")
	Worker   string // the worker's id, part of every file name
	MaxSize  int64  // a file is closed and another begun past this size (default 1 GiB)
	Software string // the crawler and its version, for the warcinfo record
	Crawl    string // the crawl's name, for the warcinfo record
	Agent    string // the User-Agent sent, for the warcinfo record
}

// Location is where a response record starts: its file (name only) and the
// byte offset of its gzip member in that file.
type Location struct {
	File   string `json:"file"`
	Offset int64  `json:"offset"`
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
	w      *gowarc.WarcFileWriter
	mu     sync.Mutex
	closed bool
}

// ErrClosed: Write after Close.
var ErrClosed = errors.New("archive: writer closed")

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
	)
	return &Writer{w: w}, nil
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
	if ex.Raw == nil {
		return Location{}, "", errors.New("archive: no captured bytes to write")
	}
	req, err := record(gowarc.Request, "application/http;msgtype=request", ex, ex.Raw.Request, false)
	if err != nil {
		return Location{}, "", err
	}
	resp, err := record(gowarc.Response, "application/http;msgtype=response", ex, ex.Raw.Response, ex.Truncated)
	if err != nil {
		req.Close()
		return Location{}, "", err
	}
	defer req.Close()
	defer resp.Close()
	digest := resp.WarcHeader().Get(gowarc.WarcPayloadDigest)
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return Location{}, "", ErrClosed
	}
	res := w.w.Write(req, resp)
	if len(res) != 2 {
		return Location{}, "", ErrClosed
	}
	for _, r := range res {
		if r.Err != nil {
			return Location{}, "", fmt.Errorf("archive: %w", r.Err)
		}
	}
	name := res[1].FileName
	if i := strings.LastIndexByte(name, os.PathSeparator); i >= 0 {
		name = name[i+1:]
	}
	return Location{File: strings.TrimSuffix(name, ".open"), Offset: res[1].FileOffset}, digest, nil
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
	return w.w.Close()
}
