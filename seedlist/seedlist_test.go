package seedlist_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redcrawl/crawler/seedlist"
	"github.com/redis/go-redis/v9"
)

// writeFile writes lines to a file of the test's and returns its path.
func writeFile(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "urls.txt")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// With SkipBad, every usable line goes in, from arguments and the file, past comments,
// blank lines, the lines before FromLine and lines that are no URL; the
// first MaxBadLines bad lines are quoted with their places, the rest only
// counted; a private host is said once.
func TestRunTakesEveryUsableLine(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		lines := []string{"http://skipped.example/", "# a comment", ""}
		for i := 0; i < 30; i++ {
			lines = append(lines, fmt.Sprintf("http://h%d.example/", i), fmt.Sprintf("ht!tp://bad %d", i))
		}
		lines = append(lines, "http://127.0.0.1/a", "http://127.0.0.1/b", strings.Repeat("x", seedlist.MaxLine+1))
		var said strings.Builder
		file := writeFile(t, lines)
		// All or nothing: the same lines without SkipBad seed nothing.
		var checked strings.Builder
		res, err := seedlist.Run(context.Background(), s.Client, "list", settings.Default(), seedlist.Options{
			Args: []string{"http://arg.example/", "not a url"}, File: file, FromLine: 2, Say: &checked})
		var bad *seedlist.BadLines
		if !errors.As(err, &bad) || bad.Bad != 32 || bad.Lines != 65 || res.Seeder || res.Seeded.Queued != 0 {
			t.Fatalf("%+v, %v; want *BadLines of 32 in 65, and no crawl", res, err)
		}
		if n := s.Client.DBSize(context.Background()).Val(); n != 0 {
			t.Fatalf("a seed that seeded nothing left %d keys", n)
		}
		res, err = seedlist.Run(context.Background(), s.Client, "list", settings.Default(), seedlist.Options{
			Args: []string{"http://arg.example/", "not a url"}, File: file, FromLine: 2, Say: &said, SkipBad: true})
		if err != nil {
			t.Fatal(err)
		}
		// Usable: the argument, 30 hosts, two loopback URLs; bad: one
		// argument, 30 lines, the long line.
		if res.Seeded.Queued != 33 || res.Bad != 32 || res.Lines != 65 || !res.Seeder {
			t.Fatalf("%+v; want 33 queued, 32 bad of 65", res)
		}
		quoted := strings.Count(said.String(), "crawler: seed: argument 2:") + strings.Count(said.String(), "urls.txt:")
		if quoted != seedlist.MaxBadLines || !strings.Contains(said.String(), "urls.txt:5:") {
			t.Errorf("%d bad lines quoted, want %d from urls.txt:5:\n%s", quoted, seedlist.MaxBadLines, said.String())
		}
		if n := strings.Count(said.String(), "127.0.0.1 is a private or loopback address"); n != 1 {
			t.Errorf("the private host said %d times; want once:\n%s", n, said.String())
		}
	})
}

// Nothing to seed, and nothing usable, are errors of their own.
func TestRunWithNothingUsable(t *testing.T) {
	s := redistest.Mini(t)
	ctx := context.Background()
	if _, err := seedlist.Run(ctx, s.Client, "none", settings.Default(), seedlist.Options{}); !errors.Is(err, seedlist.ErrNoURLs) {
		t.Errorf("no URLs: %v; want ErrNoURLs", err)
	}
	res, err := seedlist.Run(ctx, s.Client, "none", settings.Default(), seedlist.Options{Args: []string{"::", "x y"}})
	if !errors.Is(err, seedlist.ErrNoneUsable) || res.Lines != 2 || res.Seeder {
		t.Errorf("no usable URL: %+v, %v; want ErrNoneUsable, 2 lines, no crawl", res, err)
	}
}

// goneAfter fails every call once the crawl has Batch URLs queued, as a
// Redis that stopped answering would (a connection reset).
type goneAfter struct {
	probe *redis.Client
	key   string
}

func (g goneAfter) gone(ctx context.Context) error {
	if n, _ := g.probe.HGet(ctx, g.key, "queued").Int(); n >= seedlist.Batch {
		return &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return nil
}

func (g goneAfter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (g goneAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := g.gone(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}
func (g goneAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := g.gone(ctx); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// A run whose Redis stops answering past RedisRetry stops with where the
// file went in to, and the run it says to make finishes the list: every
// URL queued once.
func TestAStoppedRunSaysWhereToGoOnFrom(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		const n = 2*seedlist.Batch + 500
		lines := make([]string, n)
		for i := range lines {
			lines[i] = fmt.Sprintf("http://h%d.example/", i)
		}
		file := writeFile(t, lines)
		cut := s.NewClient(t)
		cut.AddHook(goneAfter{probe: s.Client, key: "crawl:{big}:stats"})
		ctx := context.Background()
		_, err := seedlist.Run(ctx, cut, "big", settings.Default(), seedlist.Options{File: file})
		var stopped *seedlist.Stopped
		if !errors.As(err, &stopped) || stopped.Line != seedlist.Batch || stopped.Queued != seedlist.Batch {
			t.Fatalf("%v; want a stop after line %d with %d queued", err, seedlist.Batch, seedlist.Batch)
		}
		want := fmt.Sprintf("with --from-line %d --skip-seen", seedlist.Batch+1)
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q does not say %q", err, want)
		}
		res, err := seedlist.Run(ctx, s.Client, "big", settings.Default(), seedlist.Options{File: file, FromLine: stopped.Line + 1, SkipSeen: true})
		if err != nil {
			t.Fatal(err)
		}
		if total := stopped.Queued + res.Seeded.Queued; total != n {
			t.Fatalf("%d queued in all; want %d", total, n)
		}
	})
}

// A stream (a FIFO, stdin) cannot be read twice: its first bad line stops
// the run, the lines before it sent, and the error says where to go on
// from; a bad argument stops it before anything is read.
func TestAStreamStopsAtItsFirstBadLine(t *testing.T) {
	s := redistest.Mini(t)
	fifo := filepath.Join(t.TempDir(), "seeds.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		fmt.Fprint(w, "http://a.example/1\nhttp://a.example/2\nnot a url\nhttp://a.example/4\n")
	}()
	res, err := seedlist.Run(context.Background(), s.Client, "fifo", settings.Default(), seedlist.Options{File: fifo})
	var stopped *seedlist.Stopped
	if !errors.As(err, &stopped) || stopped.Line != 2 || stopped.Queued != 2 || !strings.Contains(err.Error(), "--from-line 3") ||
		!strings.Contains(err.Error(), "seeds.fifo:3 is not a usable URL") {
		t.Fatalf("%+v, %v; want stopped at line 3, lines 1-2 queued, saying to go on from line 3", res, err)
	}
	_, err = seedlist.Run(context.Background(), s.Client, "fifo2", settings.Default(), seedlist.Options{Args: []string{"::"}, File: fifo})
	if !errors.Is(err, seedlist.ErrNoneUsable) {
		t.Fatalf("a bad argument before a stream: %v; want nothing read, nothing seeded", err)
	}
}
