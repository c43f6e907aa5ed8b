package frontier

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The results: each shard keeps a stream of the records of its pages
// (results), capped at its share of ResultsKept, and counts every record
// it adds (stats field "records"), so that what the count exceeds the
// records read is what trimming dropped before anyone read it. A record is
// opaque bytes to frontier (Outcome.Record), but for those the sweep
// writes itself (SweptRecord).

// Records reads the results streams (Keys.Results, one a shard):
// Frontier.Records.
type Records struct{ *store }

// StoredRecord is one record as a results stream keeps it.
type StoredRecord struct {
	ID       string // the stream entry's id: Redis's millisecond time and a sequence
	Body     []byte // Outcome.Record, as the exchange was given it
	NewLinks int    // the page's links the exchange queued as new
}

// Cursor is how far a reader has read each shard's stream.
type Cursor struct{ last []string }

// NewCursor starts before every shard's first record.
func (f Records) NewCursor() *Cursor {
	c := &Cursor{last: make([]string, len(f.fs))}
	for i := range c.last {
		c.last[i] = "0"
	}
	return c
}

// readBatch is how many records one read asks a stream for.
const readBatch = 1000

// Read calls fn with every record after cur, shard after shard,
// each shard's in order, moving cur on past each one fn accepted; it
// returns how many it accepted.
func (f Records) Read(ctx context.Context, cur *Cursor, fn func(StoredRecord) error) (int64, error) {
	var n int64
	for i, sh := range f.fs {
		for {
			msgs, err := f.c.XRangeN(ctx, sh.keys.Results, "("+cur.last[i], "+", readBatch).Result()
			if err != nil {
				return n, f.in(i, fmt.Errorf("frontier: read records: %w", err))
			}
			for _, m := range msgs {
				if err := fn(storedRecord(m)); err != nil {
					return n, err
				}
				n++
				cur.last[i] = m.ID
			}
			if len(msgs) < readBatch {
				break
			}
		}
	}
	return n, nil
}

func storedRecord(m redis.XMessage) StoredRecord {
	body, _ := m.Values["rec"].(string)
	links, _ := strconv.Atoi(fmt.Sprint(m.Values["new_links"]))
	return StoredRecord{ID: m.ID, Body: []byte(body), NewLinks: links}
}

// CaughtUp reports whether cur is at every shard's newest record, and how
// many records the shards added in all (kept or trimmed since), each
// shard's two facts read together.
func (f Records) CaughtUp(ctx context.Context, cur *Cursor) (bool, int64, error) {
	caughtUp, added := true, int64(0)
	for i, sh := range f.fs {
		pipe := f.c.TxPipeline()
		total := pipe.HGet(ctx, sh.keys.Stats, "records")
		newest := pipe.XRevRangeN(ctx, sh.keys.Results, "+", "-", 1)
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return false, 0, f.in(i, fmt.Errorf("frontier: read records: %w", err))
		}
		if ids := newest.Val(); len(ids) > 0 && ids[0].ID != cur.last[i] {
			caughtUp = false // records came meanwhile
		}
		n, _ := strconv.ParseInt(total.Val(), 10, 64) // absent: none yet
		added += n
	}
	return caughtUp, added, nil
}

// Await waits until the first shard's stream has a record after
// cur, or d passes, or ctx ends. One blocking read cannot span the
// shards' slots: with several, the caller reads every shard again after
// at most d anyway.
func (f Records) Await(ctx context.Context, cur *Cursor, d time.Duration) error {
	_, err := f.c.XRead(ctx, &redis.XReadArgs{Streams: []string{f.fs[0].keys.Results, cur.last[0]}, Count: 1, Block: d}).Result()
	if err != nil && !errors.Is(err, redis.Nil) && ctx.Err() == nil {
		return fmt.Errorf("frontier: wait for records: %w", err)
	}
	return nil
}

// First calls fn with up to n of the oldest records of each shard,
// shard after shard, until fn returns false.
func (f Records) First(ctx context.Context, n int, fn func(StoredRecord) bool) error {
	for i, sh := range f.fs {
		msgs, err := f.c.XRangeN(ctx, sh.keys.Results, "-", "+", int64(n)).Result()
		if err != nil {
			return f.in(i, fmt.Errorf("frontier: read records: %w", err))
		}
		for _, m := range msgs {
			if !fn(storedRecord(m)) {
				return nil
			}
		}
	}
	return nil
}

// Kept counts the records the streams hold now.
func (f Records) Kept(ctx context.Context) (int64, error) {
	pipe := f.c.Pipeline()
	lens := make([]*redis.IntCmd, len(f.fs))
	for i, sh := range f.fs {
		lens[i] = pipe.XLen(ctx, sh.keys.Results)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("frontier: count records: %w", err)
	}
	var kept int64
	for _, n := range lens {
		kept += n.Val()
	}
	return kept, nil
}

// Recent counts the records added in the last window, by Redis's
// clock (stream ids carry its milliseconds), at most 100 000 a shard.
func (f Records) Recent(ctx context.Context, window time.Duration) (int64, error) {
	now, err := f.c.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("frontier: recent records: %w", err)
	}
	from := strconv.FormatInt(now.Add(-window).UnixMilli(), 10)
	var n int64
	for i, sh := range f.fs {
		msgs, err := f.c.XRangeN(ctx, sh.keys.Results, from, "+", 100000).Result()
		if err != nil {
			return 0, f.in(i, fmt.Errorf("frontier: recent records: %w", err))
		}
		n += int64(len(msgs))
	}
	return n, nil
}
