package upload_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redcrawl/crawler/internal/s3test"
	"github.com/redcrawl/crawler/upload"
)

// files writes n files of random bytes (a few hundred KB each), as a
// worker's closed WARC files would be.
func files(t *testing.T, n int) ([]string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	var out []string
	body := map[string][]byte{}
	for i := range n {
		b := make([]byte, 100<<10+i*1000)
		rand.Read(b)
		f := filepath.Join(dir, fmt.Sprintf("redcrawl-%d-w1.warc.gz", i))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
		body[filepath.Base(f)] = b
	}
	return out, body
}

// Closed files are uploaded whole (the same bytes under the prefix),
// each removed only once its upload is verified; with the store stopped
// for a while, the files closed meanwhile stay on disk and are uploaded
// once it is back: none lost, none removed before it arrived.
func TestClosedFilesAreUploadedVerifiedAndOnlyThenRemoved(t *testing.T) {
	s := s3test.Start(t)
	u, err := upload.New(upload.Config{Target: "s3://warcs/crawl/one", Endpoint: s.URL(),
		AccessKey: s3test.Key, SecretKey: s3test.Secret, Retry: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go u.Run(ctx)
	fs, body := files(t, 6)
	for _, f := range fs[:3] {
		u.Add(f)
	}
	for len(u.Pending()) > 0 { // an event: the queue empties
		time.Sleep(10 * time.Millisecond)
	}
	s.Stop()
	for _, f := range fs[3:] {
		u.Add(f)
	}
	for u.Failures() < 3 { // the outage: attempts fail, and are retried
		time.Sleep(10 * time.Millisecond)
	}
	for _, f := range fs[3:] {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s is gone while the store was down: %v", f, err)
		}
	}
	s.Start()
	fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
	defer fcancel()
	if left := u.Finish(fctx); len(left) > 0 {
		t.Fatalf("files left after the store came back: %v", left)
	}
	for _, f := range fs {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s still on disk after its upload: %v", f, err)
		}
		got, err := s.Object("crawl/one/" + filepath.Base(f))
		if err != nil || !bytes.Equal(got, body[filepath.Base(f)]) {
			t.Errorf("%s in the store: %d bytes, %v; want the file's %d", filepath.Base(f), len(got), err, len(body[filepath.Base(f)]))
		}
	}
	if u.Uploaded() != 6 {
		t.Errorf("%d uploaded; want 6", u.Uploaded())
	}
}

// A worker that stops while the store is down says which files are left,
// and leaves them on disk.
func TestFilesNotUploadedAtTheEndAreLeftAndNamed(t *testing.T) {
	s := s3test.Start(t)
	s.Stop()
	u, err := upload.New(upload.Config{Target: "s3://warcs/", Endpoint: s.URL(), AccessKey: s3test.Key, SecretKey: s3test.Secret,
		Retry: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go u.Run(context.Background())
	fs, _ := files(t, 2)
	for _, f := range fs {
		u.Add(f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	left := u.Finish(ctx)
	if len(left) != 2 {
		t.Fatalf("left %v; want both files", left)
	}
	for _, f := range left {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s left but not on disk: %v", f, err)
		}
	}
}

// Targets and endpoints are read strictly: one clear error for what is
// not an s3:// bucket or an http(s) endpoint.
func TestTargetsAndEndpointsAreChecked(t *testing.T) {
	for _, c := range []upload.Config{{Target: "warcs/prefix"}, {Target: "s3:///prefix"}, {Target: "gs://b/p"},
		{Target: "s3://b/p", Endpoint: "ftp://x"}, {Target: "s3://b/p", Endpoint: "localhost:9000"}} {
		if _, err := upload.New(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if b, p, err := upload.ParseTarget("s3://warcs/a/b/"); err != nil || b != "warcs" || p != "a/b/" {
		t.Errorf("ParseTarget = %q %q %v", b, p, err)
	}
}

// A queued file that is gone from the folder (another worker sharing it
// uploaded it first) is dropped from the queue, not tried for ever.
func TestAFileGoneFromTheFolderIsDropped(t *testing.T) {
	s := s3test.Start(t)
	u, err := upload.New(upload.Config{Target: "s3://warcs/p", Endpoint: s.URL(), AccessKey: s3test.Key, SecretKey: s3test.Secret,
		Retry: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go u.Run(context.Background())
	fs, _ := files(t, 2)
	os.Remove(fs[0])
	u.Add(fs[0])
	u.Add(fs[1])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if left := u.Finish(ctx); len(left) != 0 || u.Uploaded() != 1 || u.Failures() != 0 {
		t.Fatalf("left %v, uploaded %d, failures %d; want the gone file dropped and the other uploaded", left, u.Uploaded(), u.Failures())
	}
}
