package wacz

import (
	"archive/zip"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path"
	"time"
)

// Version is the WACZ specification the packages follow.
const Version = "1.1.1"

// Source is one WARC file to package: its name under archive/ and how to
// read it, once, from its start.
type Source struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// Options shape a package.
type Options struct {
	Title, Description string
	// Software names what made the package (datapackage.json).
	Software string
	// TempDir holds the index's sorted runs and the pages while they are
	// collected ("": the system's).
	TempDir string
	// SortMemory bounds the index lines held in memory before they are
	// sorted into a run on disk (0: 32 MiB).
	SortMemory int
	// Now is the package's creation time (nil: time.Now).
	Now func() time.Time
	// Index is the kind of index written: IndexAuto (the default),
	// IndexCDXJ or IndexCompressed.
	Index string
	// MainPage is the URL replay opens first (datapackage.json's
	// mainPageUrl), a page of the package: its earliest capture. "" takes
	// the package's earliest capture, a crawl's first seed fetched.
	MainPage string
}

// Summary is what a package holds.
type Summary struct {
	Files    int   // WARC files
	Bytes    int64 // of WARC files
	Records  int   // WARC records read
	Captures int   // index lines: responses, revisits, resources
	Pages    int   // lines of pages.jsonl
	// Unindexed says, per file with a torn or damaged record (a worker
	// killed mid-write) or none at all, what: the file is packaged whole,
	// and the records the reader found past the damage (at the next gzip
	// member) are indexed.
	Unindexed []error
	// TooLong counts the captures left out of the index (their records are
	// in the package): a URI so long that the index line would pass 1 MiB,
	// the bound of every reader of the index, this package's --verify too.
	TooLong int
}

// resource is one file of the package, as datapackage.json lists it.
type resource struct {
	Name  string `json:"name"`
	Path  string `json:"path"`
	Hash  string `json:"hash"`
	Bytes int64  `json:"bytes"`
}

// Pack writes a WACZ of sources to w, streaming: each WARC file is copied
// into archive/ once, stored as it is (its gzip members are what replay
// reads by offset), and indexed as it passes; the index is sorted in
// bounded memory (Options.SortMemory, then runs on disk), and pages are
// collected in a temporary file. Then come indexes/index.cdxj,
// pages/pages.jsonl, datapackage.json (every file with its sha256 and
// size) and datapackage-digest.json.
func Pack(w io.Writer, sources []Source, o Options) (Summary, error) {
	if len(sources) == 0 {
		return Summary{}, errors.New("wacz: no WARC files to package")
	}
	if o.Index != IndexAuto && o.Index != IndexCDXJ && o.Index != IndexCompressed {
		return Summary{}, fmt.Errorf("wacz: index %q: want %s or %s (or none: %s past %d lines)", o.Index, IndexCDXJ, IndexCompressed, IndexCompressed, CompressAbove)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	limit := o.SortMemory
	if limit <= 0 {
		limit = 32 << 20
	}
	pk := &packer{o: o, created: now().UTC(), zw: zip.NewWriter(w), idx: newSorter(o.TempDir, limit)}
	defer pk.idx.remove()
	pagesFile, err := os.CreateTemp(o.TempDir, "redcrawl-wacz-pages-*")
	if err != nil {
		return pk.sum, fmt.Errorf("wacz: %w", err)
	}
	defer os.Remove(pagesFile.Name())
	defer pagesFile.Close()
	pk.pagesFile, pk.pagesOut = pagesFile, bufio.NewWriter(pagesFile)
	for _, step := range []func() error{func() error { return pk.warcs(sources) }, pk.indexes, pk.pages, pk.manifest} {
		if err := step(); err != nil {
			return pk.sum, err
		}
	}
	if err := pk.zw.Close(); err != nil {
		return pk.sum, fmt.Errorf("wacz: %w", err)
	}
	return pk.sum, nil
}

// packer is one package being written, file after file: the WARC files
// (indexed and their pages listed as they pass), the index, the pages,
// the manifest.
type packer struct {
	o         Options
	created   time.Time
	zw        *zip.Writer
	idx       *sorter
	pagesFile *os.File
	pagesOut  *bufio.Writer
	resources []resource
	sum       Summary
	// The main page: the earliest capture of o.MainPage, or without one
	// the earliest capture of all (a crawl's first seed fetched: the first
	// file's first page is any worker's).
	first   *page
	firstAt time.Time
}

// writePage lists p in pages.jsonl, and keeps it if it is the main page
// so far.
func (pk *packer) writePage(p page) error {
	if at, err := time.Parse(time.RFC3339Nano, p.TS); err == nil && (pk.o.MainPage == "" || p.URL == pk.o.MainPage) &&
		(pk.first == nil || at.Before(pk.firstAt)) {
		q := p
		pk.first, pk.firstAt = &q, at
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	pk.pagesOut.Write(b)
	return pk.pagesOut.WriteByte('\n')
}

// warcs copies the WARC files into archive/, each name once, indexing
// them and listing their pages as they pass.
func (pk *packer) warcs(sources []Source) error {
	seen := map[string]bool{}
	for _, src := range sources {
		name := path.Base(src.Name)
		if seen[name] {
			return fmt.Errorf("wacz: two WARC files named %s: a package holds one of each name", name)
		}
		seen[name] = true
		res, got, err := addWARC(pk.zw, src, name, pk.created, pk.idx, pk.writePage)
		if err != nil {
			return err
		}
		pk.resources = append(pk.resources, res)
		sum := &pk.sum
		sum.Files++
		sum.Bytes += res.Bytes
		sum.Records += got.records
		sum.Captures += got.captures
		sum.Pages += got.pages
		switch {
		case got.err != nil:
			sum.Unindexed = append(sum.Unindexed, got.err)
		case got.records == 0:
			sum.Unindexed = append(sum.Unindexed, fmt.Errorf("%s holds no WARC record (empty, or not a WARC file)", name))
		}
		sum.TooLong += got.tooLong
	}
	return nil
}

// indexes writes the sorted index: CDXJ, or past CompressAbove lines
// (IndexAuto) the compressed form with its secondary index.
func (pk *packer) indexes() error {
	if pk.o.Index == IndexCompressed || pk.o.Index == IndexAuto && pk.sum.Captures > CompressAbove {
		z := &zipNum{}
		res, err := addFile(pk.zw, "indexes/index.cdx.gz", pk.created, zip.Store, func(w io.Writer) error {
			z.w = w
			if _, err := pk.idx.each(z.add); err != nil {
				return err
			}
			return z.flush()
		})
		if err != nil {
			return err
		}
		pk.resources = append(pk.resources, res)
		if res, err = addFile(pk.zw, "indexes/index.idx", pk.created, zip.Deflate, z.writeIdx); err != nil {
			return err
		}
		pk.resources = append(pk.resources, res)
		return nil
	}
	res, err := addFile(pk.zw, "indexes/index.cdxj", pk.created, zip.Deflate, func(w io.Writer) error {
		_, err := pk.idx.writeTo(w)
		return err
	})
	if err != nil {
		return err
	}
	pk.resources = append(pk.resources, res)
	return nil
}

// pages writes pages/pages.jsonl from the pages listed on the way.
func (pk *packer) pages() error {
	if err := pk.pagesOut.Flush(); err != nil {
		return fmt.Errorf("wacz: pages: %w", err)
	}
	if _, err := pk.pagesFile.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("wacz: pages: %w", err)
	}
	res, err := addFile(pk.zw, "pages/pages.jsonl", pk.created, zip.Deflate, func(w io.Writer) error {
		if _, err := io.WriteString(w, `{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}`+"\n"); err != nil {
			return err
		}
		_, err := io.Copy(w, pk.pagesFile)
		return err
	})
	if err != nil {
		return err
	}
	pk.resources = append(pk.resources, res)
	return nil
}

// manifest writes datapackage.json, listing every file written before it
// with its hash, and datapackage-digest.json, its own hash.
func (pk *packer) manifest() error {
	dp := map[string]any{
		"profile": "data-package", "wacz_version": Version, "resources": pk.resources,
		"created": pk.created.Format(time.RFC3339), "modified": pk.created.Format(time.RFC3339),
	}
	for k, v := range map[string]string{"title": pk.o.Title, "description": pk.o.Description, "software": pk.o.Software} {
		if v != "" {
			dp[k] = v
		}
	}
	switch {
	case pk.first != nil:
		dp["mainPageUrl"], dp["mainPageDate"] = pk.first.URL, pk.first.TS
	case pk.o.MainPage != "":
		return fmt.Errorf("wacz: --main-page %s: the package has no page of that URL", pk.o.MainPage)
	}
	manifest, err := json.MarshalIndent(dp, "", "  ")
	if err != nil {
		return fmt.Errorf("wacz: datapackage.json: %w", err)
	}
	res, err := addFile(pk.zw, "datapackage.json", pk.created, zip.Deflate, func(w io.Writer) error {
		_, err := w.Write(manifest)
		return err
	})
	if err != nil {
		return err
	}
	digest, _ := json.MarshalIndent(map[string]string{"path": "datapackage.json", "hash": res.Hash}, "", "  ")
	_, err = addFile(pk.zw, "datapackage-digest.json", pk.created, zip.Deflate, func(w io.Writer) error {
		_, err := w.Write(digest)
		return err
	})
	return err
}

// addWARC copies one WARC file into archive/, stored, hashing it and
// indexing it as it passes.
func addWARC(zw *zip.Writer, src Source, name string, created time.Time, idx *sorter, pages func(page) error) (resource, indexed, error) {
	var got indexed
	rc, err := src.Open()
	if err != nil {
		return resource{}, got, fmt.Errorf("wacz: %s: %w", src.Name, err)
	}
	defer rc.Close()
	res, err := addFile(zw, "archive/"+name, created, zip.Store, func(w io.Writer) error {
		tee := io.TeeReader(rc, w)
		got = indexWARC(tee, name, idx, pages)
		// The index may stop before the file's end (a damaged record):
		// the rest is packaged all the same.
		_, err := io.Copy(io.Discard, tee)
		return err
	})
	if err != nil {
		return resource{}, got, fmt.Errorf("wacz: %s: %w", src.Name, err)
	}
	if got.fatal != nil {
		return resource{}, got, got.fatal
	}
	return res, got, nil
}

// addFile adds one file to the package, written by fill, and says what
// datapackage.json lists of it.
func addFile(zw *zip.Writer, name string, created time.Time, method uint16, fill func(io.Writer) error) (resource, error) {
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: created})
	if err != nil {
		return resource{}, fmt.Errorf("wacz: %s: %w", name, err)
	}
	h := &hashCount{h: sha256.New()}
	if err := fill(io.MultiWriter(fw, h)); err != nil {
		return resource{}, fmt.Errorf("wacz: %s: %w", name, err)
	}
	return resource{Name: path.Base(name), Path: name, Hash: "sha256:" + hex.EncodeToString(h.h.Sum(nil)), Bytes: h.n}, nil
}

// hashCount hashes and counts what is written to it.
type hashCount struct {
	h hash.Hash
	n int64
}

func (c *hashCount) Write(p []byte) (int, error) {
	c.h.Write(p)
	c.n += int64(len(p))
	return len(p), nil
}
