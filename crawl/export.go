package crawl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

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
}

// Export writes the records of the results stream as JSON lines. With
// follow, it then waits for new records and writes them as they come,
// until the crawl is done (or ctx ends).
func Export(ctx context.Context, c redis.UniversalClient, name string, out io.Writer, follow bool) (ExportReport, error) {
	var rep ExportReport
	if err := CheckName(name); err != nil {
		return rep, err
	}
	k := KeysFor(name)
	set, err := LoadSettings(ctx, c, k)
	if err != nil {
		return rep, err
	}
	// Each shard has its stream; each is read in order, shard after shard.
	last := make([]string, set.Shards)
	for i := range last {
		last[i] = "0"
	}
	for {
		for i := range last {
			n, err := exportFrom(ctx, c, k.Shard(i).Results, &last[i], out)
			rep.Written += n
			if err != nil {
				return rep, err
			}
		}
		// Caught up? The done flag first: records are all added before it
		// is set, so if it was set, the newest ids read after it are the
		// last ones. Then each shard's count of records ever added and its
		// newest id, read together.
		done, err := c.Exists(ctx, k.DoneFlag).Result()
		if err != nil {
			return rep, fmt.Errorf("crawl: export: %w", err)
		}
		caughtUp, added := true, int64(0)
		for i := range last {
			pipe := c.TxPipeline()
			total := pipe.HGet(ctx, k.Shard(i).Stats, "records")
			newest := pipe.XRevRangeN(ctx, k.Shard(i).Results, "+", "-", 1)
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return rep, fmt.Errorf("crawl: export: %w", err)
			}
			if ids := newest.Val(); len(ids) > 0 && ids[0].ID != last[i] {
				caughtUp = false // records came meanwhile
			}
			n, _ := strconv.ParseInt(total.Val(), 10, 64)
			added += n
		}
		if !caughtUp {
			continue
		}
		rep.Trimmed, rep.Done = max(added-rep.Written, 0), done == 1
		if !follow || done == 1 || ctx.Err() != nil {
			return rep, nil
		}
		// Wait for the next record (the done flag is looked at again at
		// least once a second). One blocking read cannot span the shards'
		// slots: with several, the first shard's stream is waited on, and
		// the others are read at least once a second.
		_, err = c.XRead(ctx, &redis.XReadArgs{Streams: []string{k.Results, last[0]}, Count: 1, Block: time.Second}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			if ctx.Err() != nil {
				return rep, nil
			}
			return rep, fmt.Errorf("crawl: export: %w", err)
		}
	}
}

// exportFrom writes the records after *last and moves *last on.
func exportFrom(ctx context.Context, c redis.UniversalClient, stream string, last *string, out io.Writer) (int64, error) {
	var written int64
	for {
		msgs, err := c.XRangeN(ctx, stream, "("+*last, "+", 1000).Result()
		if err != nil {
			return written, fmt.Errorf("crawl: export: %w", err)
		}
		for _, m := range msgs {
			var rec Record
			raw, _ := m.Values["rec"].(string)
			if err := json.Unmarshal([]byte(raw), &rec); err != nil {
				return written, fmt.Errorf("crawl: export: record %s: %w", m.ID, err)
			}
			rec.NewLinks, _ = strconv.Atoi(fmt.Sprint(m.Values["new_links"]))
			b, err := json.Marshal(rec)
			if err == nil {
				_, err = out.Write(append(b, '\n'))
			}
			if err != nil {
				return written, err
			}
			written++
			*last = m.ID
		}
		if len(msgs) < 1000 {
			return written, nil
		}
	}
}

// FirstErrors lists why the first records of a crawl were not fetched,
// "URL: error", up to n, from the oldest records of each shard's stream.
func FirstErrors(ctx context.Context, c redis.UniversalClient, name string, n int) ([]string, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	k := KeysFor(name)
	s, err := LoadSettings(ctx, c, k)
	if err != nil {
		return nil, err
	}
	var why []string
	for i := 0; i < s.Shards && len(why) < n; i++ {
		msgs, err := c.XRangeN(ctx, k.Shard(i).Results, "-", "+", int64(n)).Result()
		if err != nil {
			return why, fmt.Errorf("crawl: reading the records: %w", err)
		}
		for _, m := range msgs {
			var rec Record
			raw, _ := m.Values["rec"].(string)
			if json.Unmarshal([]byte(raw), &rec) == nil && rec.Error != "" && len(why) < n {
				why = append(why, rec.URL+": "+rec.Error)
			}
		}
	}
	return why, nil
}
