package wacz

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"golang.org/x/net/html"
)

// capture is what the index says of one record: its line's key (SURT and
// 14-digit timestamp) and its fields, as pywb's CDXJ writes them.
type capture struct {
	URL      string `json:"url"`
	Mime     string `json:"mime,omitempty"`
	Status   string `json:"status,omitempty"`
	Digest   string `json:"digest,omitempty"`
	Length   string `json:"length"`
	Offset   string `json:"offset"`
	Filename string `json:"filename"`
}

// page is one line of pages.jsonl.
type page struct {
	ID    string `json:"id"`
	URL   string `json:"url"`
	TS    string `json:"ts"`
	Title string `json:"title,omitempty"`
}

// indexed is what indexing one WARC file found.
type indexed struct {
	records, captures, pages int
	// tooLong counts the captures left out of the index: their line would
	// pass maxLine (a URI of half a megabyte), which no reader takes.
	tooLong int
	// damaged counts the damaged stretches the reader passed over, to the
	// next record it could read (err says the first).
	damaged int
	// err is why the file's index stops early (a torn or damaged record):
	// the file is packaged whole all the same, its records before it
	// indexed.
	err error
	// fatal is a failure to keep what was indexed (the index's runs or
	// the pages on a full disk): the package cannot be made.
	fatal error
}

// titleBytes bounds what is read of a page's payload for its <title>.
const titleBytes = 256 << 10

// bufferMem bounds what the WARC reader holds of one record in memory;
// a larger block goes to a temporary file.
const bufferMem = 1 << 20

// indexWARC reads the WARC file name from r, record by record, and adds a
// CDXJ line for each response, revisit and resource to idx, and a page
// for each HTML response answered 200 to pages.
func indexWARC(r io.Reader, name string, idx *sorter, pages func(page) error) indexed {
	var out indexed
	read := &countingReader{r: r}
	r = read
	wr, err := gowarc.NewWarcFileReaderFromStream(r, 0, gowarc.WithBufferMaxMemBytes(bufferMem),
		// Lenient, as a replay tool reads, but with the HTTP blocks parsed
		// (WithNoValidation would skip that): status, type, title.
		gowarc.WithSyntaxErrorPolicy(gowarc.ErrIgnore), gowarc.WithUnknownRecordTypePolicy(gowarc.ErrIgnore),
		gowarc.WithBlockErrorPolicy(gowarc.ErrIgnore),
		// The HTTP head is read here, bounded (httpHead): gowarc's own
		// parse holds a head whole, however long its lines. Its spec
		// checks only warn (nothing fails), and keep each record's block
		// (in memory up to bufferMem, then on disk) for describe to read.
		gowarc.WithSkipParseBlock(), gowarc.WithSpecViolationPolicy(gowarc.ErrWarn))
	if err != nil {
		out.err = err
		return out
	}
	defer wr.Close()
	// The stream's place at the last damage, and the damages in a row found
	// there (gowarc reads ahead: a few may come out of one buffer).
	stuck, again := int64(-1), 0
	for {
		rec, err := wr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			// A damaged record (a gzip member cut or changed): said once,
			// and the reader goes on to the next member's magic, as a
			// replay tool's does, unless it made no progress since.
			if out.err == nil {
				out.err = fmt.Errorf("%s: record %d: %w", name, out.records+1, err)
			}
			out.damaged++
			if read.n != stuck {
				stuck, again = read.n, 0
			} else if again++; again > maxDamagedInARow {
				return out // no way past it
			}
			continue
		}
		out.records++
		c, p, err := describe(rec, name)
		rec.Close()
		if err != nil {
			out.err = fmt.Errorf("%s at offset %d: %w", name, rec.Offset, err)
			return out
		}
		if c == nil {
			continue
		}
		line, err := cdxjLine(*c, rec.WarcRecord)
		if err != nil {
			out.err = fmt.Errorf("%s at offset %d: %w", name, rec.Offset, err)
			return out
		}
		if len(line) >= maxLine { // no reader of the index would take it
			out.tooLong++
			continue
		}
		out.captures++
		if err := idx.add(line); err != nil {
			out.fatal = err
			return out
		}
		if p != nil {
			out.pages++
			if err := pages(*p); err != nil {
				out.fatal = fmt.Errorf("wacz: pages: %w", err)
				return out
			}
		}
	}
}

// describe is one record's capture (nil for a record no replay looks up:
// warcinfo, request, metadata) and, for an HTML page answered 200, its
// page.
func describe(rec gowarc.Record, name string) (*capture, *page, error) {
	w := rec.WarcRecord
	switch w.Type() {
	case gowarc.Response, gowarc.Revisit, gowarc.Resource:
	default:
		return nil, nil, nil
	}
	h := w.WarcHeader()
	c := &capture{URL: h.Get(gowarc.WarcTargetURI), Digest: h.Get(gowarc.WarcPayloadDigest),
		Length: strconv.FormatInt(rec.Size, 10), Offset: strconv.FormatInt(rec.Offset, 10), Filename: name}
	if c.URL == "" {
		return nil, nil, nil
	}
	var p *page
	if strings.HasPrefix(strings.ToLower(h.Get(gowarc.ContentType)), "application/http") {
		raw, err := w.Block().RawBytes()
		if err != nil {
			return nil, nil, err
		}
		if status, ct, body, ok := httpHead(raw); ok {
			c.Status, c.Mime = strconv.Itoa(status), mediaType(ct)
			if w.Type() == gowarc.Response && status == 200 && (c.Mime == "text/html" || c.Mime == "application/xhtml+xml") {
				p = &page{URL: c.URL, Title: titleOf(io.LimitReader(body, titleBytes))}
			}
		}
	} else if w.Type() == gowarc.Resource {
		c.Mime = mediaType(h.Get(gowarc.ContentType))
	}
	if w.Type() == gowarc.Revisit {
		c.Mime = "warc/revisit"
	}
	if p != nil {
		date, err := w.Date()
		if err != nil {
			return nil, nil, err
		}
		p.TS = date.UTC().Format(time.RFC3339)
		sum := sha256.Sum256([]byte(c.URL + " " + p.TS))
		p.ID = hex.EncodeToString(sum[:8])
	}
	return c, p, nil
}

// cdxjLine is a capture's index line: "SURT TIMESTAMP {json}".
func cdxjLine(c capture, w gowarc.WarcRecord) (string, error) {
	date, err := w.Date()
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(c); err != nil {
		return "", err
	}
	key := strings.ReplaceAll(SURT(c.URL), " ", "%20") // a key is one field
	return key + " " + date.UTC().Format("20060102150405") + " " + strings.TrimSuffix(b.String(), "\n"), nil
}

// mediaType is a Content-Type's media type, lowercased ("" when none).
func mediaType(ct string) string {
	if ct == "" {
		return ""
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		return mt
	}
	t, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// titleOf is an HTML document's <title>, spaces collapsed.
func titleOf(r io.Reader) string {
	z := html.NewTokenizer(r)
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			if name, _ := z.TagName(); string(name) == "title" {
				if z.Next() == html.TextToken {
					return strings.Join(strings.Fields(string(z.Text())), " ")
				}
				return ""
			}
		}
	}
}

// maxHTTPHead bounds what is read of a record's HTTP head for its status
// and Content-Type: a head past it (one header line of 300 MB once took
// 1.5 GB to index) is indexed without them, its page without a title.
const maxHTTPHead = 64 << 10

// httpHead reads an HTTP response's head from r, at most maxHTTPHead
// bytes, without holding any line whole: its status, its Content-Type,
// and the reader at its body; false when it is no head within the bound.
func httpHead(r io.Reader) (status int, contentType string, body io.Reader, ok bool) {
	br := bufio.NewReaderSize(r, 4096)
	read := 0
	for n := 0; ; n++ {
		line, err := br.ReadSlice('\n')
		read += len(line)
		long := err == bufio.ErrBufferFull
		for err == bufio.ErrBufferFull && read <= maxHTTPHead { // a line past the buffer: skipped, counted
			var more []byte
			more, err = br.ReadSlice('\n')
			read += len(more)
		}
		if err != nil || read > maxHTTPHead {
			return 0, "", nil, false
		}
		text := strings.TrimRight(string(line), "\r\n")
		switch {
		case n == 0:
			f := strings.Fields(text)
			if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/") || long {
				return 0, "", nil, false
			}
			if status, err = strconv.Atoi(f[1]); err != nil {
				return 0, "", nil, false
			}
		case text == "":
			return status, contentType, br, true
		case !long:
			if k, v, found := strings.Cut(text, ":"); found && strings.EqualFold(strings.TrimSpace(k), "Content-Type") {
				contentType = strings.TrimSpace(v)
			}
		}
	}
}

// maxDamagedInARow bounds the damaged records read from one buffer of the
// stream before the index gives the rest of the file up.
const maxDamagedInARow = 1000

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
