package wacz

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"strings"
)

// The compressed index the specification allows for large collections
// (pywb's "ZipNum", format cdxj-gzip-1.0): indexes/index.cdx.gz holds the
// sorted CDXJ lines in blocks of blockLines, each block a gzip member of
// its own, and indexes/index.idx says where each block starts: its first
// line's key and timestamp, and the block's offset and length in
// index.cdx.gz. A replay tool reads the small .idx whole, binary-searches
// it and fetches one block, instead of reading an index of millions of
// lines.

// blockLines is a compressed index block's lines (py-wacz's choice).
var blockLines = 3000

// CompressAbove is how many index lines make Pack write the compressed
// index when Options.Index is IndexAuto.
const CompressAbove = 100_000

// The kinds of index Pack writes (Options.Index).
const (
	IndexAuto       = ""           // CDXJ, or compressed past CompressAbove lines
	IndexCDXJ       = "cdxj"       // indexes/index.cdxj
	IndexCompressed = "compressed" // indexes/index.cdx.gz and indexes/index.idx
)

// zipNum writes index.cdx.gz block by block, and keeps the .idx lines.
type zipNum struct {
	w      io.Writer
	offset int64
	block  bytes.Buffer
	lines  int
	first  string // the block's first line's key and timestamp
	idx    []string
}

// add takes one sorted line.
func (z *zipNum) add(line string) error {
	if z.lines == 0 {
		key, rest, _ := strings.Cut(line, " ")
		ts, _, _ := strings.Cut(rest, " ")
		z.first = key + " " + ts
	}
	z.block.WriteString(line)
	z.block.WriteByte('\n')
	z.lines++
	if z.lines == blockLines {
		return z.flush()
	}
	return nil
}

// flush writes the block held as one gzip member, and notes it.
func (z *zipNum) flush() error {
	if z.lines == 0 {
		return nil
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(z.block.Bytes())
	if err := zw.Close(); err != nil {
		return err
	}
	if _, err := z.w.Write(gz.Bytes()); err != nil {
		return err
	}
	meta, _ := json.Marshal(map[string]int64{"offset": z.offset, "length": int64(gz.Len())})
	z.idx = append(z.idx, z.first+" "+string(meta))
	z.offset += int64(gz.Len())
	z.block.Reset()
	z.lines = 0
	return nil
}

// writeIdx writes index.idx.
func (z *zipNum) writeIdx(w io.Writer) error {
	if _, err := io.WriteString(w, `!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}`+"\n"); err != nil {
		return err
	}
	for _, l := range z.idx {
		if _, err := io.WriteString(w, l+"\n"); err != nil {
			return err
		}
	}
	return nil
}
