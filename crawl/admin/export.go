package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/frontier/records"
	"github.com/redcrawl/crawler/redisconn"

	"github.com/redcrawl/crawler/frontier"
	"github.com/redis/go-redis/v9"
)

// The results stream is a delivery channel, not an archive: it keeps the
// newest million records (XADD MAXLEN ~), and a worker's --out file is
// the lossless record. So that nothing is lost silently, the exchange
// counts every record it adds (stats field "records"); what that count
// exceeds the records read is what trimming dropped before anyone read it.

// ExportReport says what Export did.
type ExportReport struct {
	Written int64 // records written out
	// Trimmed counts records the stream dropped (it keeps the newest
	// million) before this export could read them.
	Trimmed int64
	Done    bool // the crawl was done when the export ended
	// Changes counts the records written by how their pages compared with
	// their last fetch (crawl.ChangeNew …).
	Changes map[string]int64
}

// ChangeLine says the counts of Changes, "" when there are none.
func (r ExportReport) ChangeLine() string {
	if len(r.Changes) == 0 {
		return ""
	}
	return fmt.Sprintf("%d new, %d changed, %d unchanged, %d gone", r.Changes[crawl.ChangeNew], r.Changes[crawl.ChangeChanged], r.Changes[crawl.ChangeUnchanged], r.Changes[crawl.ChangeGone])
}

// Export writes the records of the results stream as JSON lines. With
// follow, it then waits for new records and writes them as they come,
// until the crawl is done (or ctx ends).
func Export(ctx context.Context, c redis.UniversalClient, name string, out io.Writer, follow bool) (ExportReport, error) {
	x := &exporter{name: name, out: out, follow: follow, wait: exportRetryMin, rep: ExportReport{Changes: map[string]int64{}}}
	fr, err := crawl.ReadFrontier(ctx, c, name)
	if err != nil {
		return x.rep, err
	}
	// Each shard has its stream; each is read in order, shard after shard.
	x.fr, x.cur = fr, fr.Records.NewCursor()
	for {
		over, err := x.round(ctx)
		if err != nil && x.retry(ctx, err) {
			continue
		}
		if over || err != nil {
			return x.rep, err
		}
	}
}

// exporter is one export: where it reads from and writes to, and what it
// counted.
type exporter struct {
	name   string
	fr     *frontier.Frontier
	cur    *records.Cursor
	out    io.Writer
	follow bool
	rep    ExportReport
	// failing is when Redis stopped answering (zero: it answers), and wait
	// the next wait for it.
	failing time.Time
	wait    time.Duration
}

// write writes one record out, with its count of new links.
func (x *exporter) write(r records.Stored) error {
	var rec crawl.Record
	if err := json.Unmarshal(r.Body, &rec); err != nil {
		return fmt.Errorf("crawl: export: record %s: %w", r.ID, err)
	}
	rec.NewLinks = r.NewLinks
	if rec.Change != "" {
		x.rep.Changes[rec.Change]++
	}
	b, err := json.Marshal(rec)
	if err == nil {
		_, err = x.out.Write(append(b, '\n'))
	}
	if err != nil {
		return outputError{err}
	}
	return nil
}

// retry: following, a Redis gone for a while (a restart, a failover) is
// waited for, with back-off, up to ExportRetryFor: the cursor moved only
// past records written, so reading on from it loses and repeats nothing.
func (x *exporter) retry(ctx context.Context, err error) bool {
	if !x.follow || errors.As(err, new(outputError)) || !RedisGoneForNow(err) || ctx.Err() != nil {
		return false
	}
	if x.failing.IsZero() {
		x.failing = time.Now()
	}
	if time.Since(x.failing) > ExportRetryFor {
		return false
	}
	t := time.NewTimer(x.wait)
	defer t.Stop()
	x.wait = min(2*x.wait, exportRetryMax)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// round writes the records there are, and reports whether the export is
// over: caught up, and not following or the crawl done. Following, it
// waits for the next record (a second at most) before it returns.
func (x *exporter) round(ctx context.Context) (bool, error) {
	n, err := x.fr.Records.Read(ctx, x.cur, x.write)
	x.rep.Written += n
	if err != nil {
		return false, err
	}
	// Caught up? The done flag first: records are all added before it is
	// set, so if it was set, the newest ids read after it are the last ones.
	done, err := x.fr.Done(ctx)
	if err != nil {
		return false, fmt.Errorf("crawl: export: %w", err)
	}
	caughtUp, added, err := x.fr.Records.CaughtUp(ctx, x.cur)
	if err != nil {
		return false, err
	}
	x.failing, x.wait = time.Time{}, exportRetryMin
	if !caughtUp {
		return false, nil
	}
	x.rep.Trimmed, x.rep.Done = max(added-x.rep.Written, 0), done
	if !x.follow || done || ctx.Err() != nil {
		return true, nil
	}
	// A crawl gone (reset, or a Redis restarted without its data) will
	// never be done: say so, as its workers do, rather than wait.
	if exists, err := x.fr.Exists(ctx); err != nil {
		return false, fmt.Errorf("crawl: export: %w", err)
	} else if !exists {
		return true, crawl.GoneError(x.name)
	}
	// Wait for the next record; the done flag is looked at again at least
	// once a second.
	return false, x.fr.Records.Await(ctx, x.cur, time.Second)
}

// outputError is an error writing the export out (a closed pipe: the
// reader is gone), never waited out.
type outputError struct{ err error }

func (e outputError) Error() string { return e.err.Error() }
func (e outputError) Unwrap() error { return e.err }

// ExportRetryFor is how long Export, following, waits for a Redis it
// cannot reach before it gives up; exportRetryMin and exportRetryMax bound
// the wait between tries.
const (
	ExportRetryFor                 = 5 * time.Minute
	exportRetryMin, exportRetryMax = 200 * time.Millisecond, 5 * time.Second
)

// RedisGoneForNow: an error of a Redis that is away for now (restarting,
// loading its data, a connection dropped or refused, a cluster or replica
// between masters), not of the request, a wrong address or a password:
// worth trying again.
func RedisGoneForNow(err error) bool { return redisconn.GoneForNow(err) }

// FirstErrors lists why the first records of a crawl were not fetched,
// "URL: error", up to n, from the oldest records of each shard's stream.
func FirstErrors(ctx context.Context, c redis.UniversalClient, name string, n int) ([]string, error) {
	fr, err := crawl.ReadFrontier(ctx, c, name)
	if err != nil {
		return nil, err
	}
	var why []string
	err = fr.Records.First(ctx, n, func(r records.Stored) bool {
		var rec crawl.Record
		if json.Unmarshal(r.Body, &rec) == nil && rec.Error != "" {
			why = append(why, rec.URL+": "+rec.Error)
		}
		return len(why) < n
	})
	if err != nil {
		return why, fmt.Errorf("crawl: reading the records: %w", err)
	}
	return why, nil
}
