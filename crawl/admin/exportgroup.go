package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/redcrawl/crawler/crawl"
	"github.com/redcrawl/crawler/frontier/records"
	"github.com/redis/go-redis/v9"
)

// ExportGroup follows the crawl's records through the results streams'
// consumer group group, as its reader consumer: first the records this
// reader was given before and did not acknowledge (it was killed between
// writing and acknowledging: at least once), then records no reader of
// the group was given, each acknowledged once it is written out, until
// the crawl is done and every record given (or ctx ends). Records another
// reader of the group left unacknowledged for ClaimAfter (one that
// vanished, under another name) are taken over and written too. Readers of one
// group share the records; each record carries its stream_id, the same at
// every delivery, so that a sink can drop a repeat. A record is
// acknowledged before the next is written: one round trip a record, and
// a reader killed anywhere repeats at most one. While any group
// exists, the scheduler trims the streams only below what every group
// acknowledged (frontier.Records.TrimAcked).
func ExportGroup(ctx context.Context, c redis.UniversalClient, name, group, consumer string, out io.Writer) (ExportReport, error) {
	return ExportGroupWith(ctx, c, name, group, consumer, out, GroupOptions{})
}

// GroupOptions tune ExportGroupWith.
type GroupOptions struct {
	// ClaimAfter: records another reader left unacknowledged this long
	// are taken over (ClaimAfter when 0).
	ClaimAfter time.Duration
	// Say, when set, is told why the reader waits at the end: records of
	// the group wait on other readers (it takes them over once they have
	// waited ClaimAfter).
	Say func(string)
}

// ExportGroupWith is ExportGroup with o. A reader does not finish while
// records of its group wait on another reader, unacknowledged: one that
// vanished (killed, or its name changed with its host's) left them; they
// are taken over once idle for ClaimAfter, and only then is the export
// done.
func ExportGroupWith(ctx context.Context, c redis.UniversalClient, name, group, consumer string, out io.Writer, o GroupOptions) (ExportReport, error) {
	if o.ClaimAfter <= 0 {
		o.ClaimAfter = ClaimAfter
	}
	said := ""
	rep := ExportReport{Changes: map[string]int64{}}
	fr, err := crawl.ReadFrontier(ctx, c, name)
	if err != nil {
		return rep, err
	}
	if err := fr.Records.JoinGroup(ctx, group); err != nil {
		return rep, err
	}
	pending := true // this reader's own unacknowledged records first
	for {
		ds, err := fr.Records.ReadGroup(ctx, group, consumer, pending, 500)
		if err != nil {
			return rep, err
		}
		if len(ds) == 0 && !pending {
			if ds, err = fr.Records.ClaimIdle(ctx, group, consumer, o.ClaimAfter, 500); err != nil {
				return rep, err
			}
		}
		// Each record acknowledged as soon as it is written, before the
		// next: a reader killed anywhere has written at most one record it
		// did not acknowledge, which its restart writes again.
		for _, d := range ds {
			if err := writeDelivery(out, d, &rep); err != nil {
				return rep, err
			}
			if err := fr.Records.Ack(ctx, group, []records.Delivery{d}); err != nil {
				return rep, err
			}
			rep.Written++
		}
		if len(ds) > 0 {
			continue
		}
		if pending {
			pending = false
			continue
		}
		done, err := fr.Done(ctx)
		if err != nil {
			return rep, fmt.Errorf("crawl: export: %w", err)
		}
		if done { // every record was added before the flag: one more read, and it is over
			ds, err = fr.Records.ReadGroup(ctx, group, consumer, false, 1)
			if err != nil {
				return rep, err
			}
			// ... unless records wait on a reader, unacknowledged: this
			// one's (the record just read) are written next, from its
			// pending list; another's are waited for.
			waiting, err := fr.Records.Pending(ctx, group)
			if err != nil {
				return rep, err
			}
			if len(ds) > 0 || waiting[consumer] > 0 {
				pending = true
				continue
			}
			if len(waiting) == 0 {
				rep.Done = true
				return rep, nil
			}
			if why := waitingOn(waiting, o.ClaimAfter); why != said && o.Say != nil {
				o.Say(why)
				said = why
			}
		}
		select {
		case <-ctx.Done():
			return rep, nil
		case <-time.After(records.GroupPoll):
		}
	}
}

// waitingOn says which readers hold records of the group unacknowledged.
func waitingOn(by map[string]int64, after time.Duration) string {
	names := make([]string, 0, len(by))
	var n int64
	for c, k := range by {
		names = append(names, fmt.Sprintf("%s (%d)", c, k))
		n += k
	}
	sort.Strings(names)
	return fmt.Sprintf("the crawl is done, but %d records of the group were given to other readers and not acknowledged: %s; "+
		"this reader takes them over once they have waited %v", n, strings.Join(names, ", "), after)
}

// ClaimAfter is how long a record may wait unacknowledged by the reader
// it was given to before another reader of its group takes it over.
const ClaimAfter = time.Minute

// writeDelivery writes one record given to a group's reader, with its
// count of new links and its stream_id (shard and entry id).
func writeDelivery(out io.Writer, d records.Delivery, rep *ExportReport) error {
	var rec crawl.Record
	if err := json.Unmarshal(d.Record.Body, &rec); err != nil {
		return fmt.Errorf("crawl: export: record %s: %w", d.Record.ID, err)
	}
	rec.NewLinks = d.Record.NewLinks
	rec.StreamID = fmt.Sprintf("%d-%s", d.Shard, d.Record.ID)
	if rec.Change != "" {
		rep.Changes[rec.Change]++
	}
	b, err := json.Marshal(rec)
	if err == nil {
		_, err = out.Write(append(b, '\n'))
	}
	if err != nil {
		return outputError{err}
	}
	return nil
}
