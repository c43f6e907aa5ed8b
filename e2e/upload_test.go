package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/s3test"
	"github.com/redcrawl/crawler/internal/testsite"
)

// Three worker processes crawl with --warc-upload while the store is
// stopped for 20 s mid-crawl: every WARC file a record names arrives
// (none lost), none is left on disk, and the prefix's WACZ verifies
// (every object a whole WARC file, every record where its index line
// says). The store is an S3-compatible server in the test's process
// (internal/s3test).
func TestThreeWorkersUploadThroughAStoreOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end crawl: skipped with -short")
	}
	s3 := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.Key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.Secret)
	h, _, _ := setup(t, testsite.Config{Hosts: 3, Pages: 80, ListenBase: "127.0.0.104"}, "--rate", "3", "--burst", "1")
	dir := t.TempDir()
	var ws []*proc
	for i := range 3 {
		ws = append(ws, h.startWorker(fmt.Sprint("w", i), "--warc-dir", filepath.Join(dir, fmt.Sprint("warcs", i)), "--warc-max-size", "20KB",
			"--out", filepath.Join(dir, fmt.Sprint("records", i, ".jsonl")),
			"--warc-upload", "s3://warcs/three", "--s3-endpoint", s3.URL(), "--warc-upload-wait", "1m"))
	}
	deadline := time.Now().Add(time.Minute)
	for len(s3.Keys("three/")) == 0 { // an event: the first upload arrived
		if time.Now().After(deadline) {
			t.Fatal("no WARC file uploaded within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s3.Stop()
	time.Sleep(20 * time.Second) // the outage itself: its length is what is tested
	s3.Start()
	for _, w := range ws {
		w.awaitCleanExit(t)
	}
	arrived := map[string]bool{}
	for _, k := range s3.Keys("three/") {
		arrived[filepath.Base(k)] = true
	}
	named := map[string]bool{}
	for i := range 3 {
		if left, _ := filepath.Glob(filepath.Join(dir, fmt.Sprint("warcs", i), "*")); len(left) > 0 {
			t.Errorf("worker %d left %v on disk", i, left)
		}
		for f := range namedWARCFiles(t, filepath.Join(dir, fmt.Sprint("records", i, ".jsonl"))) {
			named[f] = true
		}
	}
	for f := range named {
		if !arrived[f] {
			t.Errorf("%s, named by a record, is not in the store", f)
		}
	}
	if len(named) < 6 {
		t.Fatalf("records name %d WARC files; want many (small files, three workers)", len(named))
	}
	out := filepath.Join(dir, "three.wacz")
	h.run("wacz", "--out", out, "--s3-endpoint", s3.URL(), "s3://warcs/three")
	verified := string(h.run("wacz", "--verify", out))
	if !strings.Contains(verified, "verified") {
		t.Fatalf("the three workers' WACZ: %q", verified)
	}
	t.Logf("%d WARC files arrived through a 20 s outage; %s", len(arrived), verified)
}
