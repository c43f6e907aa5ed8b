package frontier

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Visits: what a URL's last fetch left for its next one, so that a crawl
// can be run again (a recrawl) or keep running (a continuous crawl).
//
// The exchange that ends a fetched URL's lease writes, in the same atomic
// step as its record, the URL's Visit into the visits hash of its host's
// shard (Keys.Visits) and when it is next due into that shard's due set
// (Keys.Due). The scheduler's sweep, under its fence, moves due URLs back
// to the front of their hosts' queues as items that carry their Visit
// (Item.V): in a continuous crawl those due now, after `crawler recrawl`
// those due by the recrawl's time (Recrawl). A revisit leaves the Bloom
// filter as it is: the filter says a URL was seen, the due set says when
// to see it again.

// Visit is one URL's state between fetches, kept compact (its bytes a URL
// are measured in docs/scale.md): JSON with one-letter names.
type Visit struct {
	ETag         string `json:"e,omitempty"` // the last answer's validators, sent back as If-None-Match
	LastModified string `json:"m,omitempty"` // and If-Modified-Since
	Digest       string `json:"h,omitempty"` // the payload digest of the last full answer ("sha1:BASE32")
	// Where the URL's current content is archived whole, for a revisit
	// record to refer to: the response's URI ("" for the URL itself) and
	// WARC-Date (Unix ns; 0: not archived).
	RefURI  string `json:"r,omitempty"`
	RefDate int64  `json:"t,omitempty"`
	// Interval is how long the schedule waits between fetches (seconds):
	// it shrinks when the page changed and grows when it did not.
	Interval int64 `json:"i,omitempty"`
	Gone     int   `json:"g,omitempty"` // revisits in a row answered 404 or 410
	Status   int   `json:"s,omitempty"` // the last answer's status
}

// Ref is the URI the URL's archived content is under.
func (v Visit) Ref(url string) string {
	if v.RefURI != "" {
		return v.RefURI
	}
	return url
}

// DecodeVisit reads an item's Visit; nil for an item fetched the first
// time (or one whose visit cannot be read, fetched as if the first).
func DecodeVisit(raw json.RawMessage) *Visit {
	if len(raw) == 0 {
		return nil
	}
	var v Visit
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return &v
}

// NotDue, as Outcome.Due, takes the URL off the schedule: it is not
// revisited (gone for good).
const NotDue = time.Duration(-1)

// visitText is exchange.lua's text for a finished page's visit:
// "url\nhost\ndepth\nVisit-JSON"; "" when the outcome keeps none.
func visitText(l *Lease, o Outcome) string {
	if o.Visit == nil {
		return ""
	}
	return fmt.Sprintf("%s\n%s\n%d\n%s", l.Item.URL, l.Host, l.Item.Depth, o.Visit)
}

var (
	//go:embed recrawl.lua
	recrawlSrc    string
	recrawlScript = redis.NewScript(recrawlSrc)
)

// Recrawl asks for the crawl's fetched URLs to be fetched again: those due
// by now, or with all every one the schedule keeps (not those gone for
// good). It marks them due in each shard, writes the recrawl's time where
// the scheduler's sweep reads it, and clears the done flags; the sweep
// then moves them back to the queues under its fence, as workers run. It
// returns the URLs due by the recrawl in each shard, summed.
func (f *Frontier) Recrawl(ctx context.Context, all bool) (int64, error) {
	at, err := f.c.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("frontier: recrawl: %w", err)
	}
	ms := at.UnixMilli()
	mode := "due"
	if all {
		mode = "all"
	}
	var total int64
	for _, sh := range f.fs {
		for {
			// A call marks at most a batch due, so that a big crawl does not
			// hold Redis for long; it answers how many more are left.
			r, err := recrawlScript.Run(ctx, f.c, []string{sh.keys.Due, sh.keys.Stats, sh.keys.DoneFlag, sh.keys.Config}, mode, ms, 1000).Int64Slice()
			if isGone(err) {
				return 0, ErrGone
			}
			if err != nil {
				return 0, fmt.Errorf("frontier: recrawl: %w", err)
			}
			if r[0] == 0 {
				total += r[1]
				break
			}
		}
	}
	return total, nil
}

// Revisits is the schedule's state over the shards.
type Revisits struct {
	Kept    int64         // URLs with a visit kept (fetched at least once)
	Due     int64         // URLs on the schedule
	DueNow  int64         // of those, due by now (or by the recrawl asked for)
	NextDue time.Duration // until the next URL not yet due is (-1: none)
	// RecrawlAt is when the last recrawl was asked for (zero: never).
	RecrawlAt time.Time
}

// Revisits reads the schedule, in one pipeline.
func (f *Frontier) Revisits(ctx context.Context) (Revisits, error) {
	now, err := f.c.Time(ctx).Result()
	if err != nil {
		return Revisits{}, fmt.Errorf("frontier: revisits: %w", err)
	}
	pipe := f.c.Pipeline()
	type reads struct {
		kept, due *redis.IntCmd
		at        *redis.StringCmd
		next      *redis.ZSliceCmd
	}
	rs := make([]reads, len(f.fs))
	for i, sh := range f.fs {
		rs[i] = reads{kept: pipe.HLen(ctx, sh.keys.Visits), due: pipe.ZCard(ctx, sh.keys.Due), at: pipe.HGet(ctx, sh.keys.Stats, "recrawl_at")}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return Revisits{}, fmt.Errorf("frontier: revisits: %w", err)
	}
	var out Revisits
	cutoff := now.UnixMilli()
	for _, r := range rs {
		out.Kept += r.kept.Val()
		out.Due += r.due.Val()
		if at, err := r.at.Int64(); err == nil && at > out.RecrawlAt.UnixMilli() {
			out.RecrawlAt = time.UnixMilli(at)
		}
	}
	if f.Continuous {
		cutoff = max(cutoff, out.RecrawlAt.UnixMilli())
	} else if !out.RecrawlAt.IsZero() {
		cutoff = out.RecrawlAt.UnixMilli()
	} else {
		cutoff = -1 // nothing is moved before a recrawl is asked for
	}
	pipe = f.c.Pipeline()
	counts := make([]*redis.IntCmd, len(f.fs))
	for i, sh := range f.fs {
		if cutoff >= 0 {
			counts[i] = pipe.ZCount(ctx, sh.keys.Due, "-inf", fmt.Sprint(cutoff))
		}
		rs[i].next = pipe.ZRangeByScoreWithScores(ctx, sh.keys.Due, &redis.ZRangeBy{Min: "(" + fmt.Sprint(max(cutoff, now.UnixMilli())), Max: "+inf", Count: 1})
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return Revisits{}, fmt.Errorf("frontier: revisits: %w", err)
	}
	out.NextDue = -1
	for i := range f.fs {
		if counts[i] != nil {
			out.DueNow += counts[i].Val()
		}
		if z := rs[i].next.Val(); len(z) == 1 {
			d := time.Duration(int64(z[0].Score)-now.UnixMilli()) * time.Millisecond
			if out.NextDue < 0 || d < out.NextDue {
				out.NextDue = d
			}
		}
	}
	return out, nil
}
