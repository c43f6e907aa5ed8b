package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/upload"
	"github.com/redcrawl/crawler/wacz"
	"github.com/urfave/cli/v2"
)

// The wacz command: a crawl's WARC files, from any number of workers'
// folders, packaged for replay (package wacz).

func waczCommand() *cli.Command {
	return &cli.Command{
		Name:      "wacz",
		Usage:     "package WARC files (any number of workers' --warc-dir folders, or files) into one WACZ for replay (ReplayWeb.page, pywb)",
		ArgsUsage: "DIR|FILE|s3://BUCKET/PREFIX…",
		Description: "Writes a WACZ 1.1.1 file: the WARC files as they are (archive/), a CDXJ index sorted by SURT with each\n" +
			"record's offset and length (indexes/index.cdxj, or compressed past 100 000 lines: --index), the HTML pages answered 200 with their titles (pages/pages.jsonl),\n" +
			"and datapackage.json with every file's sha256 and size. A folder gives its *.warc.gz and *.warc files (not a\n" +
			"running worker's *.open ones); s3://BUCKET/PREFIX, the objects 'work --warc-upload' put there (--s3-endpoint and\n" +
			"the AWS_* variables as for work), read as they stream. Streaming: the index is sorted in bounded memory (--sort-memory, then runs in\n" +
			"--temp-dir), so an archive of tens of gigabytes is packaged in a few tens of megabytes.\n" +
			"--verify FILE checks a WACZ instead: hashes, every index line against the record it points at, every revisit against\n" +
			"the response it refers to (package an earlier crawl's folders with the crawl whose --dedup-from named it), every page indexed.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "the WACZ `FILE` to write (it must end in .wacz)"},
			&cli.StringFlag{Name: "title", Usage: "the collection's title (datapackage.json)"},
			&cli.StringFlag{Name: "description", Usage: "the collection's description, Markdown (datapackage.json)"},
			&cli.StringFlag{Name: "main-page", Usage: "the `URL` replay opens first (datapackage.json's mainPageUrl), a page the package holds " +
				"(default: its earliest capture, the crawl's first seed fetched)"},
			&cli.StringFlag{Name: "temp-dir", Usage: "`DIR` for the index's sorted runs and the pages while they are collected (default: the system's)"},
			&cli.IntFlag{Name: "sort-memory", Value: 32, Usage: "`MiB` of index lines held in memory before they are sorted into a run on disk"},
			&cli.StringFlag{Name: "index", Usage: "the index: cdxj (indexes/index.cdxj) or compressed (indexes/index.cdx.gz in gzip blocks " +
				"and indexes/index.idx, for large collections); default: compressed past 100 000 lines"},
			&cli.StringFlag{Name: "s3-endpoint", Usage: "for s3:// sources: the object store's `URL` (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, or https://s3.amazonaws.com)"},
			&cli.StringFlag{Name: "s3-region", Usage: "for s3:// sources: the bucket's region (default: AWS_REGION)"},
			&cli.StringFlag{Name: "verify", Usage: "check the WACZ `FILE` and say what it holds, instead of writing one"},
		},
		Action: func(c *cli.Context) error {
			if v := c.String("verify"); v != "" {
				return verifyWACZ(c.App.Writer, v)
			}
			out := c.String("out")
			switch {
			case out == "":
				return usage(errors.New("wacz: --out FILE.wacz is required"))
			case !strings.HasSuffix(out, ".wacz"):
				return usage(fmt.Errorf("wacz: --out %s: a WACZ file's name ends in .wacz", out))
			case c.NArg() == 0:
				return usage(errors.New("wacz: name the WARC files or the folders that hold them"))
			case c.Int("sort-memory") < 1:
				return usage(fmt.Errorf("wacz: --sort-memory %d: want 1 MiB or more", c.Int("sort-memory")))
			case c.IsSet("index") && c.String("index") != wacz.IndexCDXJ && c.String("index") != wacz.IndexCompressed:
				return usage(fmt.Errorf("wacz: --index %q: want %s or %s", c.String("index"), wacz.IndexCDXJ, wacz.IndexCompressed))
			}
			srcs, err := waczSources(c)
			if err != nil {
				return err
			}
			return writeWACZ(c, out, srcs)
		},
	}
}

// warcFiles are the WARC files args name: files as given, folders' *.warc.gz
// and *.warc (by name, each folder's in order).
func warcFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, fmt.Errorf("wacz: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, a)
			continue
		}
		var in []string
		for _, pat := range []string{"*.warc.gz", "*.warc"} {
			m, _ := filepath.Glob(filepath.Join(a, pat))
			in = append(in, m...)
		}
		if len(in) == 0 {
			return nil, fmt.Errorf("wacz: %s holds no WARC file (*.warc.gz, *.warc)", a)
		}
		sort.Strings(in)
		files = append(files, in...)
	}
	return files, nil
}

// waczSources are the WARC files the arguments name: local files and
// folders (warcFiles), and s3:// prefixes' objects.
func waczSources(c *cli.Context) ([]wacz.Source, error) {
	var srcs []wacz.Source
	for _, a := range c.Args().Slice() {
		if !strings.HasPrefix(a, "s3://") {
			files, err := warcFiles([]string{a})
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				srcs = append(srcs, wacz.Source{Name: f, Open: func() (io.ReadCloser, error) { return os.Open(f) }})
			}
			continue
		}
		up, err := upload.New(upload.Config{Target: a, Endpoint: c.String("s3-endpoint"), Region: c.String("s3-region")})
		if err != nil {
			return nil, usage(fmt.Errorf("wacz: %v", strings.TrimPrefix(err.Error(), "upload: ")))
		}
		keys, err := up.Objects(c.Context)
		if err != nil {
			return nil, fmt.Errorf("wacz: %w", err)
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("wacz: %s holds no WARC file (*.warc.gz, *.warc)", a)
		}
		for _, k := range keys {
			srcs = append(srcs, wacz.Source{Name: k, Open: func() (io.ReadCloser, error) { return up.Open(c.Context, k) }})
		}
	}
	return srcs, nil
}

// writeWACZ packages srcs into out, written beside it first and renamed
// once whole, so that a failed run leaves no half a package.
func writeWACZ(c *cli.Context, out string, srcs []wacz.Source) error {
	tmp, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".*.partial")
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	defer os.Remove(tmp.Name())
	sum, err := wacz.Pack(tmp, srcs, wacz.Options{Title: c.String("title"), Description: c.String("description"),
		Software: crawl.Software, TempDir: c.String("temp-dir"), SortMemory: c.Int("sort-memory") << 20, Index: c.String("index"),
		MainPage: c.String("main-page")})
	if err == nil {
		err = tmp.Sync()
	}
	if err == nil { // a package is for others to replay: not CreateTemp's 0600
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), out)
	}
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	for _, u := range sum.Unindexed {
		fmt.Fprintf(c.App.ErrWriter, "crawler: wacz: %v: the file is packaged whole, what could be read past the damage indexed\n", u)
	}
	if sum.TooLong > 0 {
		fmt.Fprintf(c.App.ErrWriter, "crawler: wacz: %d captures left out of the index (their records are packaged): a URI so long "+
			"that its index line would pass 1 MiB, the bound of every index reader\n", sum.TooLong)
	}
	noun := "WARC files"
	if sum.Files == 1 {
		noun = "WARC file"
	}
	fmt.Fprintf(c.App.Writer, "%s: %d %s (%s), %d records, %d index lines, %d pages\n",
		out, sum.Files, noun, admin.ByteSize(sum.Bytes), sum.Records, sum.Captures, sum.Pages)
	switch {
	case len(sum.Unindexed) > 0:
		return fmt.Errorf("wacz: %d of the WARC files were damaged or held no record: a damaged record is in the package but not indexed (see above)", len(sum.Unindexed))
	case sum.Records == 0:
		return errors.New("wacz: the input holds no WARC record: the package is empty")
	case sum.TooLong > 0:
		return fmt.Errorf("wacz: %d captures were left out of the index (see above)", sum.TooLong)
	}
	return nil
}

// verifyWACZ checks a package and says what it holds.
func verifyWACZ(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wacz: %w", err)
	}
	ck, err := wacz.Verify(f, fi.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(w, "%s: verified: %d files as datapackage.json lists them, %d index lines each at its record, %d revisits each "+
		"resolved to a response it holds, %d pages indexed\n", path, ck.Files, ck.Lines, ck.Revisits, ck.Pages)
	return nil
}
