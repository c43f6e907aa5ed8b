package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/redistest"
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

// Three workers crawl with --warc-upload while the store is stopped for
// 20 s mid-crawl: every WARC file a record names arrives (none lost),
// none is left on disk, and the prefix's WACZ verifies (every object a
// whole WARC file, every record where its index line says).
func TestThreeWorkersUploadThroughAStoreOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a crawl of half a minute: skipped with -short")
	}
	r := redistest.Real(t)
	s3 := s3test.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.Key)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.Secret)
	site, err := testsite.Start(testsite.Config{Hosts: 3, Pages: 80, ListenBase: "127.0.0.88"})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	t.Chdir(t.TempDir())
	if _, errOut, err := run(t, append([]string{"--redis", r.URL(), "--crawl", "three", "seed", "--allow-private", "--rate", "3", "--burst", "1"}, site.Roots()...)...); err != nil {
		t.Fatalf("seed: %v %s", err, errOut)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range 3 {
		wg.Go(func() {
			_, errOut, err := run(t, "--redis", r.URL(), "--crawl", "three", "work", "--id", fmt.Sprint("w", i), "--exit-when-done",
				"--warc-dir", fmt.Sprint("warcs", i), "--warc-max-size", "20KB", "--out", fmt.Sprint("records", i, ".jsonl"),
				"--warc-upload", "s3://warcs/three", "--s3-endpoint", s3.URL(), "--warc-upload-wait", "1m")
			if err != nil {
				errs[i] = fmt.Errorf("worker %d: %v\n%s", i, err, errOut)
			}
		})
	}
	for len(s3.Keys("three/")) == 0 { // an event: the first upload arrived
		time.Sleep(50 * time.Millisecond)
	}
	s3.Stop()
	time.Sleep(20 * time.Second) // the outage itself: its length is what is tested
	s3.Start()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	arrived := map[string]bool{}
	for _, k := range s3.Keys("three/") {
		arrived[filepath.Base(k)] = true
	}
	named := map[string]bool{}
	for i := range 3 {
		if left, _ := filepath.Glob(filepath.Join(fmt.Sprint("warcs", i), "*")); len(left) > 0 {
			t.Errorf("worker %d left %v on disk", i, left)
		}
		b, err := os.ReadFile(fmt.Sprint("records", i, ".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var rec struct {
				WARC *struct{ File string } `json:"warc"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.WARC != nil {
				named[rec.WARC.File] = true
			}
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
	if _, _, err := run(t, "wacz", "--out", "three.wacz", "--s3-endpoint", s3.URL(), "s3://warcs/three"); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "wacz", "--verify", "three.wacz")
	if err != nil || !strings.Contains(out, "verified") {
		t.Fatalf("the three workers' WACZ: %q %v", out, err)
	}
	t.Logf("%d WARC files arrived through a 20 s outage; %s", len(arrived), out)
}
