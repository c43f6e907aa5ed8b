package crawl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nlnwa/gowarc/v3"
	"github.com/redcrawl/crawler/crawl"
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

// recordsByURL reads JSON lines of records (export's, --out's), failing
// the test on a line that is not one, by URL (the last of a URL wins).
func recordsByURL(t *testing.T, lines string) map[string]crawl.Record {
	t.Helper()
	out := map[string]crawl.Record{}
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var rec crawl.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		out[rec.URL] = rec
	}
	return out
}

// exportedByURL exports crawl name's records and reads them by URL.
func exportedByURL(t *testing.T, ctx context.Context, c redis.UniversalClient, name string) map[string]crawl.Record {
	t.Helper()
	var exported bytes.Buffer
	if _, err := crawl.Export(ctx, c, name, &exported, false); err != nil {
		t.Fatal(err)
	}
	return recordsByURL(t, exported.String())
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
