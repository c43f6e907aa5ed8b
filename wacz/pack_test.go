package wacz_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/wacz"
)

// raw is one exchange as it crossed the wire.
func raw(url, status, contentType, body string) *fetch.Raw {
	req := "GET " + url + " HTTP/1.1\r\nHost: x\r\nUser-Agent: RedCrawl test\r\n\r\n"
	res := fmt.Sprintf("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s", status, contentType, len(body), body)
	return &fetch.Raw{Request: []byte(req), Response: []byte(res), RemoteIP: "127.0.0.1"}
}

// warcDir writes one worker's WARC files of the exchanges into a folder
// of its own, and returns the files.
func warcDir(t *testing.T, worker string, ex []archive.Exchange) []string {
	t.Helper()
	dir := t.TempDir()
	w, err := archive.Open(archive.Config{Dir: dir, Worker: worker, Software: "RedCrawl test", Crawl: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ex {
		if _, _, err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if len(files) == 0 {
		t.Fatal("no WARC file written")
	}
	return files
}

func sources(files []string) []wacz.Source {
	var out []wacz.Source
	for _, f := range files {
		out = append(out, wacz.Source{Name: f, Open: func() (io.ReadCloser, error) { return os.Open(f) }})
	}
	return out
}

// Two workers' WARC files packaged into one WACZ that verifies: every
// file's hash and size as datapackage.json says, every index line sorted
// and pointing at a whole gzip member holding its URL's record at its
// date, every HTML page answered 200 in pages.jsonl with its title and an
// index line; the rest (a PDF, a 404) indexed but no page. With an index
// sorted through runs on disk (a few hundred bytes of memory), the same;
// and with the compressed index (blocks of lines, each a gzip member, and
// index.idx saying where each starts), the same lines.
func TestTwoWorkersWARCsPackIntoAWACZThatVerifies(t *testing.T) {
	at := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	var one, two []archive.Exchange
	for i := range 12 {
		u := fmt.Sprintf("http://www.site%d.test:8080/p/%d?b=2&a=1", i%3, i)
		e := archive.Exchange{URL: u, Started: at.Add(time.Duration(i) * time.Second),
			Raw: raw(u, "200 OK", "text/html; charset=utf-8", fmt.Sprintf("<html><head><title> Page\n %d </title></head><body>x</body></html>", i))}
		if i%2 == 0 {
			one = append(one, e)
		} else {
			two = append(two, e)
		}
	}
	one = append(one, archive.Exchange{URL: "http://site0.test/doc.pdf", Started: at, Raw: raw("http://site0.test/doc.pdf", "200 OK", "application/pdf", "%PDF-1.4")})
	one = append(one, archive.Exchange{URL: "http://site0.test/doc.pdf", Started: at.Add(time.Minute), Raw: raw("http://site0.test/doc.pdf", "200 OK", "application/pdf", "%PDF-1.5")}) // fetched again
	two = append(two, archive.Exchange{URL: "http://site1.test/gone", Started: at, Raw: raw("http://site1.test/gone", "404 Not Found", "text/html", "<title>no</title>")})
	files := append(warcDir(t, "w1", one), warcDir(t, "w2", two)...)
	for _, c := range []struct {
		memory int
		index  string
	}{{0, ""}, {300, ""}, {300, wacz.IndexCompressed}, {0, "blocks of 4"}} {
		memory := c.memory
		if c.index == "blocks of 4" { // four blocks: 4, 4, 4 and 2 lines
			defer wacz.SetBlockLines(4)()
			c.index = wacz.IndexCompressed
		}
		var out bytes.Buffer
		sum, err := wacz.Pack(&out, sources(files), wacz.Options{Title: "a test", Software: "RedCrawl test", TempDir: t.TempDir(), SortMemory: memory, Index: c.index})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Files != 2 || sum.Captures != 15 || sum.Pages != 12 || len(sum.Unindexed) != 0 {
			t.Fatalf("memory %d: summary %+v; want 2 files, 15 captures, 12 pages", memory, sum)
		}
		ck, err := wacz.Verify(bytes.NewReader(out.Bytes()), int64(out.Len()))
		if err != nil {
			t.Fatalf("memory %d: %v", memory, err)
		}
		files := map[string]int{"": 4, wacz.IndexCompressed: 5}[c.index] // the compressed index is two files
		if ck.Files != files || ck.Lines != 15 || ck.Pages != 12 {
			t.Errorf("memory %d, index %q: verified %+v; want %d files listed (2 WARC, the index, the pages), 15 lines, 12 pages", memory, c.index, ck, files)
		}
		if !strings.Contains(unzipped(t, out.Bytes(), "pages/pages.jsonl"), `"title":"Page 3"`) {
			t.Errorf("memory %d: pages.jsonl lacks the page's title:\n%s", memory, unzipped(t, out.Bytes(), "pages/pages.jsonl"))
		}
		if c.index == wacz.IndexCompressed {
			idx := unzipped(t, out.Bytes(), "indexes/index.idx")
			if !strings.HasPrefix(idx, `!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}`+"\n"+"test,site0)/doc.pdf 20261204080000 {") ||
				strings.Count(idx, "\n") != 1+map[int]int{0: 4, 300: 1}[memory] {
				t.Errorf("memory %d: index.idx:\n%s", memory, idx)
			}
			continue
		}
		idx := unzipped(t, out.Bytes(), "indexes/index.cdxj")
		if !strings.Contains(idx, "test,site1:8080)/p/1?a=1&b=2 20261204080001 ") {
			t.Errorf("memory %d: no SURT-keyed line for /p/1:\n%s", memory, idx)
		}
	}
}

// A package whose WARC bytes were changed after it was made does not
// verify: the check can fail.
func TestATamperedWACZDoesNotVerify(t *testing.T) {
	u := "http://site.test/"
	files := warcDir(t, "w1", []archive.Exchange{{URL: u, Started: time.Now(), Raw: raw(u, "200 OK", "text/html", "<title>t</title>")}})
	var out bytes.Buffer
	if _, err := wacz.Pack(&out, sources(files), wacz.Options{}); err != nil {
		t.Fatal(err)
	}
	b := out.Bytes()
	i := bytes.Index(b, []byte("WARC/1.1")) // not there: the WARC is gzipped; change a byte of its gzip data
	if i < 0 {
		i = bytes.Index(b, []byte{0x1f, 0x8b}) + 40
	}
	b[i] ^= 0xff
	if _, err := wacz.Verify(bytes.NewReader(b), int64(len(b))); err == nil {
		t.Fatal("a package with a changed byte verified")
	}
}

// unzipped is one file of a package, as text.
func unzipped(t *testing.T, pkg []byte, name string) string {
	t.Helper()
	zr, err := zipReader(pkg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Name == name {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			b, _ := io.ReadAll(rc)
			return string(b)
		}
	}
	t.Fatalf("no %s in the package", name)
	return ""
}

// The page replay opens first is the package's earliest capture (the
// crawl's first seed fetched), whichever worker's file holds it and
// whatever order the files come in; --main-page names another, and one
// the package does not hold is an error.
func TestTheMainPageIsTheEarliestCaptureOrTheOneNamed(t *testing.T) {
	at := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	ex := func(u string, s int) archive.Exchange {
		return archive.Exchange{URL: u, Started: at.Add(time.Duration(s) * time.Second), Raw: raw(u, "200 OK", "text/html", "<title>t</title>")}
	}
	a := warcDir(t, "a-first-by-name", []archive.Exchange{ex("http://site.test/p/39.html", 5), ex("http://site.test/p/2.html", 9)})
	b := warcDir(t, "b-second", []archive.Exchange{ex("http://site.test/", 1), ex("http://site.test/p/1.html", 3)})
	for _, c := range []struct{ named, want string }{{"", "http://site.test/"}, {"http://site.test/p/2.html", "http://site.test/p/2.html"}} {
		var out bytes.Buffer
		if _, err := wacz.Pack(&out, sources(append(a, b...)), wacz.Options{MainPage: c.named, TempDir: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
		var dp struct {
			Main string `json:"mainPageUrl"`
		}
		if err := json.Unmarshal([]byte(unzipped(t, out.Bytes(), "datapackage.json")), &dp); err != nil || dp.Main != c.want {
			t.Errorf("main page named %q: mainPageUrl %q (%v); want %q", c.named, dp.Main, err, c.want)
		}
	}
	if _, err := wacz.Pack(io.Discard, sources(a), wacz.Options{MainPage: "http://elsewhere.test/", TempDir: t.TempDir()}); err == nil {
		t.Error("a main page the package does not hold was taken")
	}
}
