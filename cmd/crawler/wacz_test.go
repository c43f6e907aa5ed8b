package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/archive"
	"github.com/redcrawl/crawler/fetch"
)

// crawler wacz packages two workers' folders into a WACZ that --verify
// accepts, says what it holds, and refuses a missing --out, a name that
// is no .wacz, a folder with no WARC file and a file that is no WACZ with
// one line each; a failed run leaves no file behind.
func TestWaczPackagesWorkersFoldersAndVerifies(t *testing.T) {
	var dirs []string
	for w := range 2 {
		dir := t.TempDir()
		aw, err := archive.Open(archive.Config{Dir: dir, Worker: fmt.Sprint("w", w), Software: "RedCrawl test", Crawl: "t"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			u := fmt.Sprintf("http://site%d.test/p/%d", w, i)
			body := fmt.Sprintf("<title>page %d</title>", i)
			res := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			raw := &fetch.Raw{Request: []byte("GET /p HTTP/1.1\r\nHost: x\r\n\r\n"), Response: []byte(res)}
			if _, _, err := aw.Write(archive.Exchange{URL: u, Started: time.Now(), Raw: raw}); err != nil {
				t.Fatal(err)
			}
		}
		if err := aw.Close(); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	out := filepath.Join(t.TempDir(), "crawl.wacz")
	stdout, stderr, err := run(t, append([]string{"wacz", "--out", out, "--title", "two workers"}, dirs...)...)
	if err != nil || !strings.Contains(stdout, "2 WARC files") || !strings.Contains(stdout, "6 pages") {
		t.Fatalf("wacz: %q %q %v", stdout, stderr, err)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the package's mode: %v, %v; want 0644, readable by whoever replays it", fi.Mode(), err)
	}
	if stdout, _, err = run(t, "wacz", "--verify", out); err != nil || !strings.Contains(stdout, "verified") || !strings.Contains(stdout, "6 index lines") {
		t.Fatalf("wacz --verify: %q %v", stdout, err)
	}
	compressed := filepath.Join(t.TempDir(), "c.wacz")
	if _, _, err := run(t, append([]string{"wacz", "--index", "compressed", "--out", compressed}, dirs...)...); err != nil {
		t.Fatal(err)
	}
	if stdout, _, err = run(t, "wacz", "--verify", compressed); err != nil || !strings.Contains(stdout, "6 index lines") {
		t.Fatalf("wacz --verify of a compressed index: %q %v", stdout, err)
	}
	empty := t.TempDir()
	for _, args := range [][]string{{"wacz", dirs[0]}, {"wacz", "--out", "x.zip", dirs[0]}, {"wacz", "--index", "zipnum", "--out", "x.wacz", dirs[0]}, {"wacz", "--out", filepath.Join(empty, "e.wacz"), empty},
		{"wacz", "--verify", filepath.Join(dirs[0], "nothing.wacz")}} {
		_, _, err := run(t, args...)
		if err == nil || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%v: %v; want one line of error", args, err)
		}
	}
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Errorf("a failed wacz left %v behind", left)
	}
}
