package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redcrawl/crawler/internal/s3test"
	"github.com/redcrawl/crawler/internal/testsite"
)

// A crawl with --warc-upload: every WARC file it wrote (small ones, so
// several) is in the store under the prefix, byte for byte a WARC file,
// and none is left in --warc-dir; 'crawler wacz' of the objects'
// downloads verifies, and so does 'crawler wacz s3://…' of the prefix
// itself, read as the objects stream. The store is gofakes3 in this process, on a
// loopback port.
func TestACrawlsWARCFilesAreUploaded(t *testing.T) {
	store := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.Key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.Secret)
	site, err := testsite.Start(testsite.Config{Hosts: 1, Pages: 30, ListenBase: "127.0.0.84"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	t.Chdir(t.TempDir())
	args := []string{"--crawl", "up", "crawl", "--allow-private", "--rate", "inf", "--warc-dir", "warcs", "--warc-max-size", "20KB",
		"--warc-upload", "s3://warcs/crawls/up", "--s3-endpoint", store.URL()}
	if _, errOut, err := run(t, append(args, site.Roots()...)...); err != nil {
		t.Fatalf("crawl: %v\n%s", err, errOut)
	}
	if left, _ := filepath.Glob("warcs/*"); len(left) != 0 {
		t.Errorf("files left in --warc-dir after their upload: %v", left)
	}
	if err := os.Mkdir("down", 0o755); err != nil {
		t.Fatal(err)
	}
	got := store.Keys("crawls/up/")
	for _, k := range got {
		b, err := store.Object(k)
		if err != nil || !strings.HasSuffix(k, ".warc.gz") {
			t.Fatalf("%s: %v", k, err)
		}
		if err := os.WriteFile(filepath.Join("down", filepath.Base(k)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) < 2 {
		t.Fatalf("objects %v; want the crawl's several WARC files", got)
	}
	if _, _, err := run(t, "wacz", "--out", "up.wacz", "down"); err != nil {
		t.Fatal(err)
	}
	if out, _, err := run(t, "wacz", "--verify", "up.wacz"); err != nil || !strings.Contains(out, "verified") {
		t.Fatalf("the uploaded files' WACZ: %q %v", out, err)
	}
	said, _, err := run(t, "wacz", "--out", "s3.wacz", "--s3-endpoint", store.URL(), "s3://warcs/crawls/up")
	if err != nil || !strings.Contains(said, fmt.Sprintf("%d WARC files", len(got))) {
		t.Fatalf("wacz s3://: %q %v; want the %d objects", said, err, len(got))
	}
	if out, _, err := run(t, "wacz", "--verify", "s3.wacz"); err != nil || !strings.Contains(out, "verified") {
		t.Fatalf("the prefix's WACZ: %q %v", out, err)
	}
	if _, _, err := run(t, "wacz", "--out", "none.wacz", "--s3-endpoint", store.URL(), "s3://warcs/nothing-here"); err == nil {
		t.Error("a prefix with no WARC file packaged")
	}
}
