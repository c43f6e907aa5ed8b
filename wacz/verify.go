package wacz

import (
	"archive/zip"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/nlnwa/gowarc/v3"
)

// Checked is what Verify read of a package.
type Checked struct {
	Files, Lines, Pages int
	Revisits            int // revisit records, each resolved to a response the package holds
}

// Verify reads a WACZ whole and checks what replay relies on: every file
// datapackage.json lists is there with its size and sha256, and
// datapackage-digest.json holds the manifest's; every line of
// indexes/index.cdxj is in order and its offset and length hold exactly
// one whole gzip member of its WARC file, a record of the line's URL and
// date; every revisit record refers (WARC-Refers-To-Target-URI and -Date)
// to a response the index has a line of, so replay finds its payload;
// every page of pages/pages.jsonl has a line. It returns the first fault
// found.
func Verify(r io.ReaderAt, size int64) (Checked, error) {
	var ck Checked
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return ck, fmt.Errorf("wacz: not a ZIP file: %w", err)
	}
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		if err := entryName(f.Name); err != nil {
			return ck, err
		}
		if err := within(f, size); err != nil {
			return ck, err
		}
		files[f.Name] = f
	}
	manifest, err := readAll(files, "datapackage.json")
	if err != nil {
		return ck, err
	}
	var dp struct {
		Profile   string     `json:"profile"`
		Version   string     `json:"wacz_version"`
		Resources []resource `json:"resources"`
	}
	if err := json.Unmarshal(manifest, &dp); err != nil || dp.Profile != "data-package" || dp.Version == "" {
		return ck, fmt.Errorf("wacz: datapackage.json: profile %q, wacz_version %q (%v)", dp.Profile, dp.Version, err)
	}
	digest, err := readAll(files, "datapackage-digest.json")
	if err != nil {
		return ck, err
	}
	var dd struct{ Path, Hash string }
	sum := sha256.Sum256(manifest)
	if json.Unmarshal(digest, &dd) != nil || dd.Path != "datapackage.json" || dd.Hash != "sha256:"+hex.EncodeToString(sum[:]) {
		return ck, fmt.Errorf("wacz: datapackage-digest.json does not hold datapackage.json's sha256")
	}
	for _, res := range dp.Resources {
		if err := verifyResource(files, res); err != nil {
			return ck, err
		}
		ck.Files++
	}
	indexed, lines, revisits, err := verifyIndex(files, r)
	if err != nil {
		return ck, err
	}
	ck.Lines, ck.Revisits = lines, revisits
	ck.Pages, err = verifyPages(files, indexed)
	return ck, err
}

// verifyResource checks a file datapackage.json lists: there, of its
// bytes and hash, and stored (not compressed) if it is a WARC file.
func verifyResource(files map[string]*zip.File, res resource) error {
	f := files[res.Path]
	if f == nil {
		return fmt.Errorf("wacz: %s is listed but not in the package", res.Path)
	}
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("wacz: %s: %w", res.Path, err)
	}
	h := &hashCount{h: sha256.New()}
	_, err = io.Copy(h, rc)
	rc.Close()
	if err != nil {
		return fmt.Errorf("wacz: %s: %w", res.Path, err)
	}
	if got := "sha256:" + hex.EncodeToString(h.h.Sum(nil)); got != res.Hash || h.n != res.Bytes {
		return fmt.Errorf("wacz: %s: %d bytes, %s; datapackage.json says %d, %s", res.Path, h.n, got, res.Bytes, res.Hash)
	}
	if strings.HasPrefix(res.Path, "archive/") && f.Method != zip.Store {
		return fmt.Errorf("wacz: %s is compressed in the ZIP; a WARC file must be stored", res.Path)
	}
	return nil
}

// verifyPages checks that every page of pages/pages.jsonl has an index
// line, and counts them.
func verifyPages(files map[string]*zip.File, indexed map[string]bool) (int, error) {
	pages, err := openFile(files, "pages/pages.jsonl")
	if err != nil {
		return 0, err
	}
	defer pages.Close()
	sc := bufio.NewScanner(pages)
	sc.Buffer(make([]byte, 1<<16), maxLine)
	n := 0
	for line := 1; sc.Scan(); line++ {
		var p page
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return n, fmt.Errorf("wacz: pages.jsonl line %d: %w", line, err)
		}
		if line == 1 && p.URL == "" {
			continue // the header line
		}
		if !indexed[strings.ReplaceAll(SURT(p.URL), " ", "%20")] {
			return n, fmt.Errorf("wacz: page %s has no index line", p.URL)
		}
		n++
	}
	return n, sc.Err()
}

// verifyIndex checks every index line against the record it points at,
// and returns the keys it holds, its lines and its revisits, each
// resolved: the lines of indexes/index.cdxj, or of the compressed index's
// blocks, each block where index.idx says and starting with the key it
// says.
func verifyIndex(files map[string]*zip.File, r io.ReaderAt) (map[string]bool, int, int, error) {
	keys, r2 := map[string]bool{}, &revisits{responses: map[string]bool{}}
	lines, err := indexLines(files, r, keys, r2)
	if err != nil {
		return nil, 0, 0, err
	}
	n, err := r2.resolve()
	return keys, lines, n, err
}

// indexLines checks the index's lines, noting their keys and revisits.
func indexLines(files map[string]*zip.File, r io.ReaderAt, keys map[string]bool, rv *revisits) (int, error) {
	prev, n := "", 0
	check := func(line string) error {
		n++
		if line < prev {
			return fmt.Errorf("wacz: index line %d is out of order", n)
		}
		prev = line
		key, rest, _ := strings.Cut(line, " ")
		ts, js, _ := strings.Cut(rest, " ")
		var c capture
		if err := json.Unmarshal([]byte(js), &c); err != nil || len(ts) != 14 {
			return fmt.Errorf("wacz: index line %d: %q", n, line)
		}
		target, err := verifyCapture(files, r, c, ts)
		if err != nil {
			return fmt.Errorf("wacz: index line %d (%s): %w", n, c.URL, err)
		}
		keys[key] = true
		switch {
		case c.Mime == "warc/revisit":
			target.of = c.URL
			rv.targets = append(rv.targets, *target)
		case c.Status != "":
			rv.responses[key+" "+ts] = true
		}
		return nil
	}
	if files["indexes/index.idx"] == nil {
		idx, err := openFile(files, "indexes/index.cdxj")
		if err != nil {
			return 0, err
		}
		defer idx.Close()
		err = eachLine(idx, check)
		return n, err
	}
	blocks, err := openFile(files, "indexes/index.idx")
	if err != nil {
		return 0, err
	}
	defer blocks.Close()
	cdx := files["indexes/index.cdx.gz"]
	if cdx == nil || cdx.Method != zip.Store {
		return 0, fmt.Errorf("wacz: index.idx without a stored indexes/index.cdx.gz")
	}
	at, err := cdx.DataOffset()
	if err != nil {
		return 0, err
	}
	err = eachLine(blocks, func(entry string) error {
		if strings.HasPrefix(entry, "!meta ") {
			return nil
		}
		first, js, ok := cutLast(entry, " ")
		var b struct{ Offset, Length int64 }
		if !ok || json.Unmarshal([]byte(js), &b) != nil || !inside(b.Offset, b.Length, int64(cdx.CompressedSize64)) {
			return fmt.Errorf("wacz: index.idx line %q: its block is not inside index.cdx.gz (%d bytes)", clip(entry), cdx.CompressedSize64)
		}
		zr, err := gzip.NewReader(io.NewSectionReader(r, at+b.Offset, b.Length))
		if err != nil {
			return fmt.Errorf("wacz: no gzip member at offset %d of index.cdx.gz: %w", b.Offset, err)
		}
		zr.Multistream(false)
		head := true
		return eachLine(zr, func(line string) error {
			if head && !strings.HasPrefix(line, first+" ") {
				return fmt.Errorf("wacz: the block at offset %d of index.cdx.gz starts %q; index.idx says %q", b.Offset, line, first)
			}
			head = false
			return check(line)
		})
	})
	return n, err
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// eachLine hands every line of r to fn.
func eachLine(r io.Reader, fn func(string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), maxLine)
	for sc.Scan() {
		if err := fn(sc.Text()); err != nil {
			return err
		}
	}
	return sc.Err()
}

// verifyCapture checks that c's offset and length in its WARC file hold
// one whole gzip member, a record of c's URL dated ts, read where replay
// reads it: at the stored file's data in the package r. A revisit
// record's reference is returned (nil for any other record).
func verifyCapture(files map[string]*zip.File, r io.ReaderAt, c capture, ts string) (*revisitTarget, error) {
	f := files["archive/"+c.Filename]
	if f == nil {
		return nil, fmt.Errorf("its file %s is not in archive/", c.Filename)
	}
	if f.Method != zip.Store {
		return nil, fmt.Errorf("its file %s is compressed in the ZIP; a WARC file must be stored", c.Filename)
	}
	off, err1 := strconv.ParseInt(c.Offset, 10, 64)
	length, err2 := strconv.ParseInt(c.Length, 10, 64)
	if err1 != nil || err2 != nil || !inside(off, length, int64(f.CompressedSize64)) {
		return nil, fmt.Errorf("offset %s and length %s outside its file's %d bytes", clip(c.Offset), clip(c.Length), f.CompressedSize64)
	}
	dataAt, err := f.DataOffset()
	if err != nil {
		return nil, err
	}
	// Read where it is, never copied whole: a line's length is the
	// package's word, bounded only by the file (within the package).
	member := io.NewSectionReader(r, dataAt+off, length)
	zr, err := gzip.NewReader(member)
	if err != nil {
		return nil, fmt.Errorf("no gzip member at offset %d: %w", off, err)
	}
	zr.Multistream(false)
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return nil, fmt.Errorf("the gzip member at offset %d is not whole: %w", off, err)
	}
	wr, err := gowarc.NewWarcFileReaderFromStream(io.NewSectionReader(r, dataAt+off, length), 0, gowarc.WithNoValidation())
	if err != nil {
		return nil, err
	}
	defer wr.Close()
	rec, err := wr.Next()
	if err != nil {
		return nil, fmt.Errorf("no WARC record at offset %d: %w", off, err)
	}
	defer rec.Close()
	date, err := rec.WarcRecord.Date()
	if err != nil || rec.WarcRecord.WarcHeader().Get(gowarc.WarcTargetURI) != c.URL || date.UTC().Format("20060102150405") != ts {
		return nil, fmt.Errorf("the record at offset %d is of %s at %v, not of the line's URL at %s", off, rec.WarcRecord.WarcHeader().Get(gowarc.WarcTargetURI), date, ts)
	}
	if rec.Size != length {
		return nil, fmt.Errorf("the record at offset %d takes %d bytes, the line says %d", off, rec.Size, length)
	}
	if rec.WarcRecord.Type() != gowarc.Revisit {
		return nil, nil
	}
	h := rec.WarcRecord.WarcHeader()
	to, err := time.Parse(time.RFC3339Nano, h.Get(gowarc.WarcRefersToDate))
	if err != nil || h.Get(gowarc.WarcRefersToTargetURI) == "" {
		return nil, fmt.Errorf("the revisit record at offset %d names no target URI and date (WARC-Refers-To-Target-URI %q, -Date %q)",
			off, clip(h.Get(gowarc.WarcRefersToTargetURI)), clip(h.Get(gowarc.WarcRefersToDate)))
	}
	return &revisitTarget{uri: h.Get(gowarc.WarcRefersToTargetURI), date: to}, nil
}

// readAll reads one file of the package whole (a manifest).
func readAll(files map[string]*zip.File, name string) ([]byte, error) {
	rc, err := openFile(files, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, 64<<20))
}

// openFile opens one file of the package.
func openFile(files map[string]*zip.File, name string) (io.ReadCloser, error) {
	f := files[name]
	if f == nil {
		return nil, fmt.Errorf("wacz: no %s in the package", name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("wacz: %s: %w", name, err)
	}
	return rc, nil
}

// inside: [off, off+length) is a non-empty range within size bytes,
// compared without adding the two (each may be the package's, near 2^63).
func inside(off, length, size int64) bool {
	return off >= 0 && length > 0 && size >= 0 && off <= size && length <= size-off
}

// within checks that an entry's data is inside the package of size bytes,
// as its header says it is: a stored entry's sizes agree, and its
// compressed bytes end before the package does. Every length read after
// is bounded by these.
func within(f *zip.File, size int64) error {
	at, err := f.DataOffset()
	if err != nil {
		return fmt.Errorf("wacz: %s: %w", clip(f.Name), err)
	}
	if f.CompressedSize64 > uint64(size) || !inside(at, max(int64(f.CompressedSize64), 1), size+1) {
		return fmt.Errorf("wacz: %s claims %d bytes, past the package's end (%d bytes)", clip(f.Name), f.CompressedSize64, size)
	}
	if f.Method == zip.Store && f.UncompressedSize64 != f.CompressedSize64 {
		return fmt.Errorf("wacz: %s is stored, yet its header claims %d bytes unpacked and %d packed", clip(f.Name), f.UncompressedSize64, f.CompressedSize64)
	}
	return nil
}

// entryName refuses an entry whose name is not a relative path inside the
// package (WACZ: archive/, indexes/, pages/ and the manifests), which an
// unzip of it would write elsewhere.
func entryName(name string) error {
	clean := path.Clean(name)
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || clean == ".." || strings.HasPrefix(clean, "../") ||
		strings.Contains("/"+name+"/", "/../") || len(name) > 1 && name[1] == ':' {
		return fmt.Errorf("wacz: entry %q is not a relative path inside the package: the package does not conform", clip(name))
	}
	return nil
}

// clip is s, cut to 200 bytes for a message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
