package archive

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nlnwa/gowarc/v3"
)

// A worker killed with kill -9 leaves the file it was writing with its
// ".open" suffix, for ever, and every record written to it points at the
// name without the suffix, which never comes. Orphans finds such files,
// and Recover closes one as the worker would have: cut back to its last
// whole exchange, renamed.

// Orphan is a WARC file left open: its path, and the file-safe id of the
// worker that wrote it (FileSafe), from its name.
type Orphan struct {
	Path   string
	Worker string
}

// orphanName is the name Open gives a file, while it is open:
// PREFIX-TIMESTAMP-SERIAL-WORKER.warc.gz.open.
var orphanName = regexp.MustCompile(`^(.+)-(\d{14})-(\d{5,})-([A-Za-z0-9._-]+)\.warc\.gz\.open$`)

// Orphans lists the files of dir left open by writers of prefix.
func Orphans(dir, prefix string) ([]Orphan, error) {
	if prefix == "" {
		prefix = "redcrawl"
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	var out []Orphan
	for _, e := range entries {
		m := orphanName.FindStringSubmatch(e.Name())
		if e.IsDir() || m == nil || m[1] != prefix {
			continue
		}
		out = append(out, Orphan{Path: filepath.Join(dir, e.Name()), Worker: m[4]})
	}
	return out, nil
}

// PartOf is the crawl a WARC file's warcinfo record says it is part of
// ("" when its first record is not a whole warcinfo record).
func PartOf(path string) string {
	r, err := gowarc.NewWarcFileReader(path, 0)
	if err != nil {
		return ""
	}
	defer r.Close()
	rec, err := r.Next()
	if err != nil || rec.WarcRecord == nil {
		return ""
	}
	defer rec.Close()
	if rec.WarcRecord.Type() != gowarc.Warcinfo {
		return ""
	}
	br, err := rec.WarcRecord.Block().RawBytes()
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(br)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimRight(sc.Text(), "\r"), "isPartOf: "); ok {
			return v
		}
	}
	return ""
}

// Recovered says what Recover did to a file.
type Recovered struct {
	Path    string // the file's name now, without ".open" ("" when removed)
	Kept    int64  // bytes of whole records kept
	Dropped int64  // bytes cut off the end: a torn record, or a request whose response never came
	Records int    // records kept
}

// Recover closes a file left open by a writer that died: it keeps the
// records that read whole (each a gzip member read to its end, its
// digests right), and of those the whole exchanges (a request with no
// response after it goes), cuts the rest off, and renames the file without
// ".open". A file with no whole record, not even its warcinfo, is removed.
func Recover(path string) (Recovered, error) {
	if !strings.HasSuffix(path, ".open") {
		return Recovered{}, fmt.Errorf("archive: %s is not an open WARC file", path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Recovered{}, fmt.Errorf("archive: %w", err)
	}
	keep, records, err := wholeExchanges(path)
	if err != nil {
		return Recovered{}, err
	}
	res := Recovered{Kept: keep, Dropped: fi.Size() - keep, Records: records}
	if records == 0 {
		if err := os.Remove(path); err != nil {
			return res, fmt.Errorf("archive: %w", err)
		}
		return res, nil
	}
	if res.Dropped > 0 {
		if err := os.Truncate(path, keep); err != nil {
			return res, fmt.Errorf("archive: %w", err)
		}
	}
	closed := strings.TrimSuffix(path, ".open")
	if _, err := os.Stat(closed); err == nil {
		return res, fmt.Errorf("archive: %s exists already: %s left as it is", closed, path)
	}
	if err := os.Rename(path, closed); err != nil {
		return res, fmt.Errorf("archive: %w", err)
	}
	res.Path = closed
	return res, nil
}

// wholeExchanges reads path's records in order and returns where the last
// whole exchange ends (the warcinfo record counts as one, and so does a
// record of its own: metadata, revisit) and how many records come before
// that. The writer compresses each record as a gzip member of its own, so
// a record is whole when its member decompresses to its end (which says
// exactly where it ends) and the record in it parses with its digests
// right.
func wholeExchanges(path string) (end int64, records int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	type member struct {
		start, end int64
		t          gowarc.RecordType
	}
	var ms []member
	cr := &countingReader{r: bufio.NewReader(f)}
	var z gzip.Reader
	for {
		start := cr.n
		if _, err := cr.r.Peek(1); err != nil {
			break // the file's end
		}
		if err := z.Reset(cr); err != nil {
			break
		}
		z.Multistream(false)
		if _, err := io.Copy(io.Discard, &z); err != nil {
			break // torn
		}
		ms = append(ms, member{start: start, end: cr.n})
	}
	for i := range ms {
		t, ok := recordAt(path, ms[i].start)
		if !ok {
			ms = ms[:i]
			break
		}
		ms[i].t = t
	}
	for i, m := range ms {
		if m.t != gowarc.Request { // a request is whole with the response after it
			end, records = m.end, i+1
		}
	}
	return end, records, nil
}

// recordAt reads the record at offset of path: its type, and whether it is
// whole.
func recordAt(path string, offset int64) (gowarc.RecordType, bool) {
	r, err := gowarc.NewWarcFileReader(path, offset, gowarc.WithStrictValidation())
	if err != nil {
		return 0, false
	}
	defer r.Close()
	rec, err := r.Next()
	if err != nil || rec.WarcRecord == nil {
		return 0, false
	}
	defer rec.Close()
	return rec.WarcRecord.Type(), readWhole(rec.WarcRecord)
}

// countingReader counts the bytes read through it; a gzip.Reader reads a
// member through its ReadByte, no further than the member's end.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// readWhole reads a record's block to its end, checking its gzip member
// and its digests: false if it is torn or wrong.
func readWhole(rec gowarc.WarcRecord) bool {
	if _, err := rec.ValidateDigest(); err != nil {
		return false
	}
	br, err := rec.Block().RawBytes()
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, br)
	return err == nil
}
