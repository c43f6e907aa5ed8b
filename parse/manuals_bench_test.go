package parse

import (
	"bytes"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// The pages of bench's real-site crawl (BenchmarkRealSite): Debian's
// PostgreSQL, Python and Apache manuals, read from where their packages
// put them (apt-get install postgresql-doc-15 python3.11-doc apache2-doc).
var manualDirs = []string{
	"/usr/share/doc/postgresql-doc-15/html",
	"/usr/share/doc/python3.11/html",
	"/usr/share/doc/apache2-doc/manual",
}

type manualPage struct {
	u    *url.URL
	body []byte
}

// manualPages reads every HTML page of the manuals, each with the URL it
// has in the crawl (a host a manual), or skips the benchmark b (with no
// b, the pages of those installed).
func manualPages(b *testing.B) ([]manualPage, int64) {
	var pages []manualPage
	var size int64
	for i, dir := range manualDirs {
		if _, err := os.Stat(dir); err != nil {
			if b == nil {
				continue
			}
			b.Skipf("no %s (apt-get install postgresql-doc-15 python3.11-doc apache2-doc)", dir)
		}
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
				return nil
			}
			body, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(dir, path)
			u, _ := url.Parse("http://127.0.0.4" + string(rune('1'+i)) + ":8080/" + filepath.ToSlash(rel))
			pages = append(pages, manualPage{u, body})
			size += int64(len(body))
			return nil
		})
	}
	return pages, size
}

// BenchmarkExtractManuals extracts the links of every page of the three
// manuals (an op is all of them), and reports the cost a page: without a
// memo, and with one the pages share as a worker's do.
func BenchmarkExtractManuals(b *testing.B) {
	pages, size := manualPages(b)
	for _, bc := range []struct {
		name string
		memo func() *Memo
	}{{"no-memo", func() *Memo { return nil }}, {"memo", func() *Memo { return NewMemo(MemoSize) }}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			links := 0
			for i := 0; i < b.N; i++ {
				links = 0
				lim := Limits{Memo: bc.memo()}
				for _, p := range pages {
					links += len(ExtractBytes(p.u, p.body, lim).Links)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(pages)), "µs/page")
			b.ReportMetric(float64(links)/float64(len(pages)), "links/page")
		})
	}
}

// BenchmarkTokenizeManuals is the floor of BenchmarkExtractManuals: the
// HTML tokenizer alone over the same pages, every token read and dropped.
func BenchmarkTokenizeManuals(b *testing.B) {
	eachManualPage(b, func(body []byte) {
		z := html.NewTokenizer(bytes.NewReader(body))
		for z.Next() != html.ErrorToken {
		}
		if z.Err() != io.EOF {
			b.Fatal(z.Err())
		}
	})
}

// BenchmarkScanManuals is the floor of extraction by the scanner: every
// tag of the same pages found, nothing decoded, no link resolved.
func BenchmarkScanManuals(b *testing.B) {
	eachManualPage(b, func(body []byte) {
		s := scanner{b: body}
		for s.next() {
		}
	})
}

// eachManualPage runs read over every page of the manuals b.N times, and
// reports the time a page.
func eachManualPage(b *testing.B, read func(body []byte)) {
	pages, size := manualPages(b)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pages {
			read(p.body)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(pages)), "µs/page")
}
