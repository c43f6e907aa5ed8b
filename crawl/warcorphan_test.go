package crawl_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/internal/redistest"
)

// leaveOpen writes an exchange to a WARC file of worker in dir, for crawl,
// and never closes it: what kill -9 leaves. It returns the file's path
// and the Location a record of it would carry.
func leaveOpen(t *testing.T, dir, worker, crawlName string) (string, archive.Location) {
	t.Helper()
	w, err := archive.Open(archive.Config{Dir: filepath.Join(dir, worker+"-tmp"), Worker: worker, Crawl: crawlName})
	if err != nil {
		t.Fatal(err)
	}
	loc, _, err := w.Write(archive.Exchange{URL: "http://a.example/", Started: time.Now(), Raw: &fetch.Raw{
		Request:  []byte("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n"),
		Response: []byte("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nhi"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	open, _ := filepath.Glob(filepath.Join(dir, worker+"-tmp", "*.open"))
	if len(open) != 1 {
		t.Fatalf("%v open", open)
	}
	path := filepath.Join(dir, filepath.Base(open[0]))
	if err := os.Rename(open[0], path); err != nil {
		t.Fatal(err)
	}
	return path, loc
}

// A worker that starts closes the WARC files a killed worker left open:
// its own id's, and those of workers not alive that belong to its crawl
// and lay untouched for a lease; each then bears the name its records
// point at. A live worker's file, another crawl's, and one written to
// lately are left alone.
func TestAStartingWorkerClosesTheWARCFilesLeftOpen(t *testing.T) {
	s := redistest.Real(t)
	smallSite(t, s, "orphans")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	own, ownLoc := leaveOpen(t, dir, "w1", "orphans")
	dead, deadLoc := leaveOpen(t, dir, "w9", "orphans")
	fresh, _ := leaveOpen(t, dir, "w8", "orphans")
	live, _ := leaveOpen(t, dir, "w2", "orphans")
	other, _ := leaveOpen(t, dir, "w7", "another-crawl")
	long := time.Now().Add(-time.Hour)
	for _, p := range []string{dead, live, other} {
		os.Chtimes(p, long, long)
	}
	o2 := fastOptions("w2")
	if _, err := crawl.NewWorker(ctx, s.Client, "orphans", o2); err != nil { // alive, registered
		t.Fatal(err)
	}
	o := fastOptions("w1")
	o.WARC = &archive.Config{Dir: dir}
	if _, err := crawl.NewWorker(ctx, s.Client, "orphans", o); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path   string
		loc    archive.Location
		closed bool
	}{{own, ownLoc, true}, {dead, deadLoc, true}, {fresh, archive.Location{}, false}, {live, archive.Location{}, false}, {other, archive.Location{}, false}} {
		_, openErr := os.Stat(c.path)
		_, closedErr := os.Stat(strings.TrimSuffix(c.path, ".open"))
		if c.closed != (openErr != nil && closedErr == nil) {
			t.Errorf("%s: closed %v (open: %v, closed: %v)", filepath.Base(c.path), !c.closed, openErr, closedErr)
		}
		if c.closed && filepath.Base(strings.TrimSuffix(c.path, ".open")) != c.loc.File {
			t.Errorf("%s: its records point at %s", c.path, c.loc.File)
		}
	}
	var read int
	eachWARCRecord(t, dir, func(gowarc.Record) { read++ })
	if read != 2*3 { // two files: warcinfo, request, response each
		t.Errorf("%d records read strictly from the closed files; want 6", read)
	}
}
