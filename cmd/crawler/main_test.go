package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	err := app.Run(append([]string{"crawler"}, args...))
	return out.String(), errOut.String(), err
}

func TestRedisPasswordNeverPrinted(t *testing.T) {
	for _, u := range []string{"redis://:s3cret@127.0.0.1:1/0", "redis://user:s3cret@127.0.0.1:abc/0", "rediss://u:s3cret@[::1/0"} {
		_, _, err := run(t, "--redis", u, "status")
		if err == nil {
			t.Fatalf("%s: no error", u)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error shows the password: %v", err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error is more than one line: %q", err)
		}
	}
}

func TestSeedReportsBadLinesAndSeedsTheRest(t *testing.T) {
	mr := miniredis.RunT(t)
	file := filepath.Join(t.TempDir(), "seeds.txt")
	os.WriteFile(file, []byte("http://a.example/\n# a comment\n\nnot a url\nftp://b.example/\nhttps://c.example/x\n"), 0o644)
	// The per-line reports go to the process's stderr; the summary is the error.
	out, _, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "-f", file)
	if err == nil || !strings.Contains(err.Error(), "2 of 4 lines") {
		t.Fatalf("seed error %v; want a summary of 2 bad lines of 4", err)
	}
	if !strings.Contains(out, "2 URLs queued") {
		t.Fatalf("seed output %q; want the 2 good URLs queued", out)
	}
	if _, _, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "--rate", "7", "http://d.example/"); err == nil || !strings.Contains(err.Error(), "--rate is 1, not 7") {
		t.Fatalf("conflicting seed: %v", err)
	}
	if _, _, err := run(t, "--redis", "redis://"+mr.Addr()+"/0", "seed", "http://d.example/"); err != nil {
		t.Fatalf("seed without flags must add to the crawl: %v", err)
	}
}

func TestUsageErrorsAreOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"work", "--bogus"}, "see 'crawler work --help'"},
		{[]string{"seed", "--rate", "fast", "http://a.example/"}, `--rate "fast"`},
		{[]string{"seed", "--scope", "planet", "http://a.example/"}, `--scope "planet"`},
		{[]string{"crawl", "--rate", "-1", "http://a.example/"}, `--rate "-1"`},
		// Checked before Redis is contacted (none listens on port 1).
		{[]string{"--redis", "redis://127.0.0.1:1/0", "work", "-c", "1000000"}, "--concurrency 1000000: want 1 to 512"},
		{[]string{"--redis", "redis://127.0.0.1:1/0", "work", "-c", "0"}, "--concurrency 0: want 1 to 512"},
		{[]string{"crawl", "-c", "100000", "http://a.example/"}, "--concurrency 100000"},
	} {
		_, _, err := run(t, tc.args...)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %q; want one line naming %s", tc.args, err, tc.want)
		}
	}
}
