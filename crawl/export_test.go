package crawl_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/crawl/admin"
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/crawl/status"
	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// addRecords puts n records on the results stream as exchanges do: each
// counted in the stats field "records".
func addRecords(t *testing.T, s *redistest.Server, k keyspace.Keys, from, n int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < from+n; i++ {
		rec := fmt.Sprintf(`{"url":"http://h.example/%d","status":200}`, i)
		if err := s.Client.XAdd(ctx, &redis.XAddArgs{Stream: k.Results, Values: []any{"rec", rec, "new_links", "0"}}).Err(); err != nil {
			t.Fatal(err)
		}
		s.Client.HIncrBy(ctx, k.Stats, "records", 1)
	}
}

func newCrawl(t *testing.T, s *redistest.Server, name string) keyspace.Keys {
	t.Helper()
	if _, err := admin.Seed(context.Background(), s.Client, name, settings.Default(), nil); err != nil {
		t.Fatal(err)
	}
	return keyspace.KeysFor(name)
}

// Records the stream trimmed before an export read them are counted, not
// passed over in silence.
func TestExportSaysWhatWasTrimmed(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx := context.Background()
		k := newCrawl(t, s, "trim")
		addRecords(t, s, k, 0, 50)
		if err := s.Client.XTrimMaxLen(ctx, k.Results, 20).Err(); err != nil { // as MAXLEN does when the stream is full
			t.Fatal(err)
		}
		var out strings.Builder
		rep, err := admin.Export(ctx, s.Client, "trim", &out, false)
		if err != nil || rep.Written != 20 || rep.Trimmed != 30 || strings.Count(out.String(), "\n") != 20 {
			t.Fatalf("Export = %+v, %v, %d lines; want 20 written, 30 trimmed", rep, err, strings.Count(out.String(), "\n"))
		}
		if !strings.HasPrefix(out.String(), `{"url":"http://h.example/30"`) {
			t.Fatalf("first record %q; want the oldest kept, 30", strings.SplitN(out.String(), "\n", 2)[0])
		}
		st, err := status.Read(ctx, s.Client, "trim")
		if err != nil || st.ResultsTrimmed != 30 {
			t.Fatalf("status: %d trimmed (%v); want 30", st.ResultsTrimmed, err)
		}
	})
}

// followExport runs Export --follow of crawl name in the background. read
// returns its next n lines, failing the test if it ends before; end reads
// the rest and returns what Export returned.
func followExport(ctx context.Context, t *testing.T, s *redistest.Server, name string) (read func(n int) []string, end func() (admin.ExportReport, error)) {
	pr, pw := io.Pipe()
	type result struct {
		rep admin.ExportReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := admin.Export(ctx, s.Client, name, pw, true)
		pw.Close()
		done <- result{rep, err}
	}()
	lines := bufio.NewScanner(pr)
	read = func(n int) []string {
		t.Helper()
		var got []string
		for i := 0; i < n; i++ {
			if !lines.Scan() {
				r := <-done
				t.Fatalf("export ended after %d of %d records: %+v, %v", i, n, r.rep, r.err)
			}
			got = append(got, lines.Text())
		}
		return got
	}
	end = func() (admin.ExportReport, error) {
		for lines.Scan() {
		}
		r := <-done
		return r.rep, r.err
	}
	return read, end
}

// export --follow writes records as they arrive and ends when the crawl is
// done.
func TestExportFollows(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		k := newCrawl(t, s, "follow")
		addRecords(t, s, k, 0, 3)
		read, end := followExport(ctx, t, s, "follow")
		read(3)
		addRecords(t, s, k, 3, 2) // records arrive while it follows
		read(2)
		s.Client.Set(ctx, k.DoneFlag, "1", 0)
		if rep, err := end(); err != nil || rep.Written != 5 || rep.Trimmed != 0 {
			t.Fatalf("Export --follow = %+v, %v; want 5 written when the crawl is done", rep, err)
		}
	})
}

// export --follow of a crawl that goes away (reset, or a Redis restarted
// empty) ends with the line its workers end with, instead of waiting for
// a done that will never come.
func TestExportFollowEndsWhenTheCrawlIsGone(t *testing.T) {
	redistest.Both(t, func(t *testing.T, s *redistest.Server) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		k := newCrawl(t, s, "vanish")
		addRecords(t, s, k, 0, 2)
		read, end := followExport(ctx, t, s, "vanish")
		read(2)
		if _, err := admin.Reset(ctx, s.Client, "vanish", true); err != nil {
			t.Fatal(err)
		}
		rep, err := end()
		if !errors.Is(err, crawl.ErrGone) || !strings.Contains(err.Error(), `"vanish": reset, or Redis restarted without its data`) || rep.Written != 2 {
			t.Fatalf("Export --follow of a crawl reset = %+v, %v; want the 2 records, then ErrGone with the workers' line", rep, err)
		}
		if ctx.Err() != nil {
			t.Fatal("it waited for the test's deadline")
		}
	})
}

// export --follow rides out a Redis restart: it waits for the server,
// reads on from where it was, and writes every record once.
func TestExportFollowsThroughARedisRestart(t *testing.T) {
	s := redistest.Real(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k := newCrawl(t, s, "restart")
	addRecords(t, s, k, 0, 3)
	if err := s.Client.Save(ctx).Err(); err != nil { // what the restarted server comes back with
		t.Fatal(err)
	}
	read, end := followExport(ctx, t, s, "restart")
	got := read(3) // caught up: it waits for the next record
	s.Crash(t)
	// Down longer than go-redis's own retries of a command last (three,
	// under a second in all): the scenario, a restart, not a wait for an event.
	time.Sleep(2 * time.Second)
	s.Restart(t)
	for s.Client.Ping(ctx).Err() != nil { // the test's own connections were cut too
		if ctx.Err() != nil {
			t.Fatal("the restarted server never answered")
		}
	}
	addRecords(t, s, k, 3, 2)
	got = append(got, read(2)...)
	s.Client.Set(ctx, k.DoneFlag, "1", 0)
	if rep, err := end(); err != nil || rep.Written != 5 {
		t.Fatalf("Export --follow across a restart = %+v, %v; want 5 written", rep, err)
	}
	for i, line := range got {
		if want := fmt.Sprintf(`"url":"http://h.example/%d"`, i); !strings.Contains(line, want) {
			t.Errorf("record %d: %s; want %s, each record once and in order", i, line, want)
		}
	}
}
