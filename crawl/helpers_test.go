package crawl_test

import (
	"path/filepath"
	"testing"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redis/go-redis/v9"
)

// frontierOf is crawl name's frontier of shards shards, to read it.
func frontierOf(t *testing.T, c redis.UniversalClient, name string, shards int) *frontier.Frontier {
	t.Helper()
	fr, err := frontier.New(c, name, frontier.Options{Shards: shards})
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

// eachWARCRecord reads every .warc.gz file in dir with nlnwa/gowarc's
// strict reader, failing the test on a file or record it cannot read, and
// calls fn with each record (closed after fn returns).
func eachWARCRecord(t *testing.T, dir string, fn func(gowarc.Record)) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	for _, file := range files {
		r, err := gowarc.NewWarcFileReader(file, 0, gowarc.WithStrictValidation())
		if err != nil {
			t.Fatal(err)
		}
		for rec, err := range r.Records() {
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			fn(rec)
			rec.Close()
		}
		r.Close()
	}
}
