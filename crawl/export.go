package crawl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

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
	// their last fetch (ChangeNew …).
	Changes map[string]int64
}

// ChangeLine says the counts of Changes, "" when there are none.
func (r ExportReport) ChangeLine() string {
	if len(r.Changes) == 0 {
		return ""
	}
	return fmt.Sprintf("%d new, %d changed, %d unchanged, %d gone", r.Changes[ChangeNew], r.Changes[ChangeChanged], r.Changes[ChangeUnchanged], r.Changes[ChangeGone])
}

// Export writes the records of the results stream as JSON lines. With
// follow, it then waits for new records and writes them as they come,
// until the crawl is done (or ctx ends).
func Export(ctx context.Context, c redis.UniversalClient, name string, out io.Writer, follow bool) (ExportReport, error) {
	rep := ExportReport{Changes: map[string]int64{}}
	fr, err := readFrontier(ctx, c, name)
	if err != nil {
		return rep, err
	}
	// Each shard has its stream; each is read in order, shard after shard.
	cur := fr.NewCursor()
	write := func(r frontier.StoredRecord) error {
		var rec Record
		if err := json.Unmarshal(r.Body, &rec); err != nil {
			return fmt.Errorf("crawl: export: record %s: %w", r.ID, err)
		}
		rec.NewLinks = r.NewLinks
		if rec.Change != "" {
			rep.Changes[rec.Change]++
		}
		b, err := json.Marshal(rec)
		if err == nil {
			_, err = out.Write(append(b, '\n'))
		}
		return err
	}
	for {
		n, err := fr.ReadRecords(ctx, cur, write)
		rep.Written += n
		if err != nil {
			return rep, err
		}
		// Caught up? The done flag first: records are all added before it
		// is set, so if it was set, the newest ids read after it are the
		// last ones.
		done, err := fr.Done(ctx)
		if err != nil {
			return rep, fmt.Errorf("crawl: export: %w", err)
		}
		caughtUp, added, err := fr.CaughtUp(ctx, cur)
		if err != nil {
			return rep, err
		}
		if !caughtUp {
			continue
		}
		rep.Trimmed, rep.Done = max(added-rep.Written, 0), done
		if !follow || done || ctx.Err() != nil {
			return rep, nil
		}
		// Wait for the next record; the done flag is looked at again at
		// least once a second.
		if err := fr.AwaitRecord(ctx, cur, time.Second); err != nil {
			return rep, err
		}
	}
}

// FirstErrors lists why the first records of a crawl were not fetched,
// "URL: error", up to n, from the oldest records of each shard's stream.
func FirstErrors(ctx context.Context, c redis.UniversalClient, name string, n int) ([]string, error) {
	fr, err := readFrontier(ctx, c, name)
	if err != nil {
		return nil, err
	}
	var why []string
	err = fr.FirstRecords(ctx, n, func(r frontier.StoredRecord) bool {
		var rec Record
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

// readFrontier is crawl name's frontier, to read: laid out as its settings
// say, without its Bloom filters.
func readFrontier(ctx context.Context, c redis.UniversalClient, name string) (*frontier.Frontier, error) {
	s, err := LoadSettings(ctx, c, name)
	if err != nil {
		return nil, err
	}
	return frontier.New(c, name, s.frontierOptions())
}
