package records

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Streams are a crawl's results streams (keyspace.Keys.Results, one a
// shard), which its exchanges write: Frontier.Records.
type Streams struct {
	c      redis.UniversalClient
	shards []Shard
	in     func(i int, err error) error // an error of shard i, naming it
}

// Shard is one shard's results stream and the stats hash whose field
// "records" counts every record the stream was given.
type Shard struct {
	Results, Stats string
	Cap            int64 // the stream's cap: its share of the crawl's ResultsKept
}

// New reads the results streams of shards through c; in names shard i in
// an error of its.
func New(c redis.UniversalClient, shards []Shard, in func(i int, err error) error) Streams {
	return Streams{c: c, shards: shards, in: in}
}

// Stored is one record as a results stream keeps it.
type Stored struct {
	ID       string // the stream entry's id: Redis's millisecond time and a sequence
	Body     []byte // Outcome.Record, as the exchange was given it
	NewLinks int    // the page's links the exchange queued as new
}

// Cursor is how far a reader has read each shard's stream.
type Cursor struct{ last []string }

// NewCursor starts before every shard's first record.
func (f Streams) NewCursor() *Cursor {
	c := &Cursor{last: make([]string, len(f.shards))}
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
func (f Streams) Read(ctx context.Context, cur *Cursor, fn func(Stored) error) (int64, error) {
	var n int64
	for i, sh := range f.shards {
		for {
			msgs, err := f.c.XRangeN(ctx, sh.Results, "("+cur.last[i], "+", readBatch).Result()
			if err != nil {
				return n, f.in(i, fmt.Errorf("frontier: read records: %w", err))
			}
			for _, m := range msgs {
				if err := fn(stored(m)); err != nil {
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

func stored(m redis.XMessage) Stored {
	body, _ := m.Values["rec"].(string)
	links, _ := strconv.Atoi(fmt.Sprint(m.Values["new_links"]))
	return Stored{ID: m.ID, Body: []byte(body), NewLinks: links}
}

// CaughtUp reports whether cur is at every shard's newest record, and how
// many records the shards added in all (kept or trimmed since), each
// shard's two facts read together.
func (f Streams) CaughtUp(ctx context.Context, cur *Cursor) (bool, int64, error) {
	caughtUp, added := true, int64(0)
	for i, sh := range f.shards {
		pipe := f.c.TxPipeline()
		total := pipe.HGet(ctx, sh.Stats, "records")
		newest := pipe.XRevRangeN(ctx, sh.Results, "+", "-", 1)
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
func (f Streams) Await(ctx context.Context, cur *Cursor, d time.Duration) error {
	_, err := f.c.XRead(ctx, &redis.XReadArgs{Streams: []string{f.shards[0].Results, cur.last[0]}, Count: 1, Block: d}).Result()
	if err != nil && !errors.Is(err, redis.Nil) && ctx.Err() == nil {
		return fmt.Errorf("frontier: wait for records: %w", err)
	}
	return nil
}

// First calls fn with up to n of the oldest records of each shard,
// shard after shard, until fn returns false.
func (f Streams) First(ctx context.Context, n int, fn func(Stored) bool) error {
	for i, sh := range f.shards {
		msgs, err := f.c.XRangeN(ctx, sh.Results, "-", "+", int64(n)).Result()
		if err != nil {
			return f.in(i, fmt.Errorf("frontier: read records: %w", err))
		}
		for _, m := range msgs {
			if !fn(stored(m)) {
				return nil
			}
		}
	}
	return nil
}

// Kept counts the records the streams hold now.
func (f Streams) Kept(ctx context.Context) (int64, error) {
	pipe := f.c.Pipeline()
	lens := make([]*redis.IntCmd, len(f.shards))
	for i, sh := range f.shards {
		lens[i] = pipe.XLen(ctx, sh.Results)
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
func (f Streams) Recent(ctx context.Context, window time.Duration) (int64, error) {
	now, err := f.c.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("frontier: recent records: %w", err)
	}
	from := strconv.FormatInt(now.Add(-window).UnixMilli(), 10)
	var n int64
	for i, sh := range f.shards {
		msgs, err := f.c.XRangeN(ctx, sh.Results, from, "+", 100000).Result()
		if err != nil {
			return 0, f.in(i, fmt.Errorf("frontier: recent records: %w", err))
		}
		n += int64(len(msgs))
	}
	return n, nil
}
