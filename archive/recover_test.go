package archive_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
	"pgregory.net/rapid"
)

type span struct {
	start, end int64
	t          gowarc.RecordType
}

// spans reads a whole file's records: where each begins and ends.
// fataler is what the checks need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}

func spans(t fataler, path string) []span {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gowarc.NewWarcFileReader(path, 0, gowarc.WithStrictValidation())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []span
	for rec, err := range r.Records() {
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if n := len(out); n > 0 {
			out[n-1].end = rec.Offset
		}
		out = append(out, span{start: rec.Offset, t: rec.WarcRecord.Type()})
		rec.Close()
	}
	out[len(out)-1].end = fi.Size()
	return out
}

// An open file, as a writer killed with kill -9 leaves it: a warcinfo
// record and exchanges, the last one perhaps torn anywhere.
func openFile(t testing.TB, dir string, exchanges int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html>%s</html>", strings.Repeat("page "+r.URL.Path, 40))
	}))
	defer srv.Close()
	cfg := fetch.DefaultConfig()
	cfg.AllowPrivate, cfg.Capture = true, true
	f := fetch.New(cfg)
	w, err := archive.Open(archive.Config{Dir: dir, Worker: "w1", Crawl: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < exchanges; i++ {
		start := time.Now()
		res, err := f.Fetch(t.Context(), fmt.Sprintf("%s/%d", srv.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := w.Write(archive.Exchange{URL: srv.URL, Started: start, Raw: res.Raw}); err != nil {
			t.Fatal(err)
		}
	}
	open, _ := filepath.Glob(filepath.Join(dir, "*.open"))
	if len(open) != 1 {
		t.Fatalf("%d files open; want 1", len(open))
	}
	return open[0] // never closed: as after kill -9
}

// A file cut at any byte is recovered to the whole exchanges before the
// cut: what is left reads strictly, ends with a whole exchange (no request
// without its response), holds every exchange that ended before the cut,
// and bears the name its records point at.
func TestAnOrphanIsCutToItsWholeExchangesAndClosed(t *testing.T) {
	src := openFile(t, t.TempDir(), 6)
	full := spans(t, src)
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if got := archive.PartOf(src); got != "c1" {
		t.Fatalf("PartOf = %q; want the crawl of its warcinfo, c1", got)
	}
	// What Recover must keep of a file cut at c: up to the end of the last
	// record that closes an exchange and ends by c.
	want := func(c int64) (keep int64, records int) {
		for i, s := range full {
			if s.end <= c && s.t != gowarc.Request {
				keep, records = s.end, i+1
			}
		}
		return keep, records
	}
	check := func(t fataler, dir string, c int64) {
		path := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(path, orig[:c], 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := archive.Recover(path)
		if err != nil {
			t.Fatalf("cut at %d: %v", c, err)
		}
		keep, records := want(c)
		if res.Kept != keep || res.Records != records || res.Dropped != c-keep {
			t.Fatalf("cut at %d of %d: kept %d bytes, %d records, dropped %d; want %d, %d", c, len(orig), res.Kept, res.Records, res.Dropped, keep, records)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("cut at %d: the .open file is still there", c)
		}
		if records == 0 {
			if res.Path != "" {
				t.Fatalf("cut at %d: nothing whole, yet %s kept", c, res.Path)
			}
			return
		}
		if res.Path != strings.TrimSuffix(path, ".open") {
			t.Fatalf("cut at %d: renamed to %s", c, res.Path)
		}
		got := spans(t, res.Path)
		if len(got) != records || got[len(got)-1].t == gowarc.Request {
			t.Fatalf("cut at %d: %d records read back, the last a %s", c, len(got), got[len(got)-1].t)
		}
	}
	// Every record's edges, a byte either side.
	for _, s := range full {
		for _, c := range []int64{s.start - 1, s.start, s.start + 1, s.end - 1, s.end} {
			if c >= 0 && c <= int64(len(orig)) {
				check(t, t.TempDir(), c)
			}
		}
	}
	// Anywhere.
	rapid.Check(t, func(rt *rapid.T) {
		check(rt, t.TempDir(), rapid.Int64Range(0, int64(len(orig))).Draw(rt, "cut"))
	})
}

// Orphans finds the files a writer of the prefix left open, with the
// worker each names, and nothing else.
func TestOrphansAreFoundByName(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		"redcrawl-20261203101500-00001-w1.warc.gz.open",
		"redcrawl-20261203101500-00002-vm-1234.warc.gz.open",
		"redcrawl-20261203101500-00001-w1.warc.gz",
		"other-20261203101500-00001-w1.warc.gz.open",
		"notes.open",
	} {
		os.WriteFile(filepath.Join(dir, name), nil, 0o644)
	}
	got, err := archive.Orphans(dir, "redcrawl")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range got {
		names = append(names, filepath.Base(o.Path)+"@"+o.Worker)
	}
	if want := "redcrawl-20261203101500-00001-w1.warc.gz.open@w1 redcrawl-20261203101500-00002-vm-1234.warc.gz.open@vm-1234"; strings.Join(names, " ") != want {
		t.Fatalf("Orphans = %v; want %s", names, want)
	}
}
