// Package recrawl is what a URL's last fetch left for its next one
// (Visit), and the schedule's side a reader and 'crawler recrawl' use
// (Schedule): a crawl run again or kept running.
package recrawl

import (
	"context"
	"embed"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/queue"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// What a URL's last fetch left for its next one, so that a crawl can be
// run again (a recrawl) or keep running (a continuous crawl).
// frontier.Frontier.Visits asks for a recrawl and reads the schedule; the
// frontier's exchange and sweep keep it.
//
// The exchange that ends a fetched URL's lease writes, in the same atomic
// step as its record, the URL's Visit into the due set of its host's
// shard (keyspace.Keys.Due), scored by when it is next due. The scheduler's sweep,
// under its fence, moves due URLs back to the front of their hosts'
// queues as items that carry their Visit (frontier.Item.V): in a continuous crawl
// those due now, after `crawler recrawl` those due by the recrawl's time
// (Schedule.Recrawl), taking them out of the due set as they do. While a URL is
// queued or in flight it is in no due set; the exchange that ends it puts
// its new visit in. A revisit leaves the Bloom filter as it
// is: the filter says a URL was seen, the due set says when to see it
// again.
//
// A member of the due set is one string, "host\nelement\nvisit": the
// host, the URL and its depth as the queues' compact element (queue.lua),
// and the Visit's fields separated by tabs, so that a URL costs Redis one
// zset entry (its bytes are measured in docs/scale.md).

// Schedule is the schedule's side a reader and `crawler recrawl` use:
// frontier.Frontier.Visits.
type Schedule struct {
	keyspace.Set
	// Continuous reports whether the crawl keeps running
	// (frontier.Options.Continuous): URLs due by now are moved back.
	Continuous func() bool
}

// Visit is one URL's state between fetches.
type Visit struct {
	ETag         string // the last answer's validators, sent back as If-None-Match
	LastModified string // and If-Modified-Since
	Digest       string // the payload digest of the last full answer ("sha1:BASE32")
	// Where the URL's current content is archived whole, for a revisit
	// record to refer to: the response's URI ("" for the URL itself) and
	// WARC-Date (Unix ns; 0: not archived).
	RefURI  string
	RefDate int64
	// Interval is how long the schedule waits between fetches (seconds):
	// it shrinks when the page changed and grows when it did not.
	Interval int64
	Gone     int // revisits in a row answered 404 or 410
	Status   int // the last answer's status
}

// Ref is the URI the URL's archived content is under.
func (v Visit) Ref(url string) string {
	if v.RefURI != "" {
		return v.RefURI
	}
	return url
}

// Encode is the visit as the due set and an Item keep it: its fields
// separated by tabs, trailing empty ones left out, a Last-Modified in
// HTTP's format kept as Unix seconds. A field with a byte outside
// printable ASCII (no valid validator has one) is dropped, so that the
// sweep's JSON round trip of a visit (member, item, member) changes no byte.
func (v Visit) Encode() string {
	clean := func(s string) string {
		for i := 0; i < len(s); i++ {
			if s[i] < 0x20 || s[i] >= 0x7f {
				return ""
			}
		}
		return s
	}
	lm := clean(v.LastModified)
	if t, err := http.ParseTime(lm); err == nil && t.UTC().Format(http.TimeFormat) == lm {
		lm = strconv.FormatInt(t.Unix(), 10)
	}
	num := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	f := []string{clean(v.ETag), lm, clean(v.Digest), clean(v.RefURI), num(v.RefDate), num(v.Interval), num(int64(v.Gone)), num(int64(v.Status))}
	for len(f) > 0 && f[len(f)-1] == "" {
		f = f[:len(f)-1]
	}
	return strings.Join(f, "\t")
}

// Decode reads an item's Visit; nil for an item fetched the first time.
func Decode(s string) *Visit {
	if s == "" {
		return nil
	}
	f := strings.Split(s, "\t")
	for len(f) < 8 {
		f = append(f, "")
	}
	n := func(s string) int64 { x, _ := strconv.ParseInt(s, 10, 64); return x }
	v := &Visit{ETag: f[0], LastModified: f[1], Digest: f[2], RefURI: f[3], RefDate: n(f[4]), Interval: n(f[5]), Gone: int(n(f[6])), Status: int(n(f[7]))}
	if secs, err := strconv.ParseInt(v.LastModified, 10, 64); err == nil {
		v.LastModified = time.Unix(secs, 0).UTC().Format(http.TimeFormat)
	}
	return v
}

var (
	//go:embed recrawl.lua
	luaFiles      embed.FS
	lua           = script.NewLib("frontier/recrawl", luaFiles, queue.Lua)
	recrawlScript = lua.Script("recrawl")
)

// Recrawl asks for the crawl's fetched URLs to be fetched again: those due
// by now, or with all every one the schedule keeps (not those gone for
// good). It marks them due in each shard, writes the recrawl's time where
// the scheduler's sweep reads it, and clears the done flags; the sweep
// then moves them back to the queues under its fence, as workers run. It
// returns the URLs due by the recrawl in each shard, summed.
func (f Schedule) Recrawl(ctx context.Context, all bool) (int64, error) {
	at, err := f.C.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("frontier: recrawl: %w", err)
	}
	ms := at.UnixMilli()
	mode := "due"
	if all {
		mode = "all"
	}
	var total int64
	for _, k := range f.Keys {
		for {
			// A call marks at most a batch due, so that a big crawl does not
			// hold Redis for long; it answers how many more are left.
			r, err := recrawlScript.Run(ctx, f.C, []string{k.Due, k.Stats, k.DoneFlag, k.Config}, mode, ms, 1000).Int64Slice()
			if keyspace.IsGone(err) {
				return 0, keyspace.ErrGone
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
	Scheduled int64         // URLs on the schedule (fetched, and neither in flight nor gone for good)
	DueNow    int64         // of those, due by now (or by the recrawl asked for)
	NextDue   time.Duration // until the next URL not yet due is (-1: none)
	// RecrawlAt is when the last recrawl was asked for (zero: never).
	RecrawlAt time.Time
}

// Read reads the schedule, in two pipelines.
func (f Schedule) Read(ctx context.Context) (Revisits, error) {
	now, err := f.C.Time(ctx).Result()
	if err != nil {
		return Revisits{}, fmt.Errorf("frontier: revisits: %w", err)
	}
	pipe := f.C.Pipeline()
	type reads struct {
		due   *redis.IntCmd
		at    *redis.StringCmd
		count *redis.IntCmd
		next  *redis.ZSliceCmd
	}
	rs := make([]reads, len(f.Keys))
	for i, k := range f.Keys {
		rs[i] = reads{due: pipe.ZCard(ctx, k.Due), at: pipe.HGet(ctx, k.Stats, "recrawl_at")}
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return Revisits{}, fmt.Errorf("frontier: revisits: %w", err)
	}
	var out Revisits
	for _, r := range rs {
		out.Scheduled += r.due.Val()
		if at, err := r.at.Int64(); err == nil && at > out.RecrawlAt.UnixMilli() {
			out.RecrawlAt = time.UnixMilli(at)
		}
	}
	// What the sweep moves: with Continuous what is due by now, else what
	// is due by the last recrawl (nothing before one is asked for).
	cutoff := int64(-1)
	if !out.RecrawlAt.IsZero() {
		cutoff = out.RecrawlAt.UnixMilli()
	}
	if f.Continuous() {
		cutoff = max(cutoff, now.UnixMilli())
	}
	pipe = f.C.Pipeline()
	for i, k := range f.Keys {
		if cutoff >= 0 {
			rs[i].count = pipe.ZCount(ctx, k.Due, "-inf", strconv.FormatInt(cutoff, 10))
		}
		rs[i].next = pipe.ZRangeByScoreWithScores(ctx, k.Due, &redis.ZRangeBy{Min: "(" + strconv.FormatInt(max(cutoff, now.UnixMilli()), 10), Max: "+inf", Count: 1})
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return Revisits{}, fmt.Errorf("frontier: revisits: %w", err)
	}
	out.NextDue = -1
	for _, r := range rs {
		if r.count != nil {
			out.DueNow += r.count.Val()
		}
		if z := r.next.Val(); len(z) == 1 {
			d := time.Duration(int64(z[0].Score)-now.UnixMilli()) * time.Millisecond
			if out.NextDue < 0 || d < out.NextDue {
				out.NextDue = d
			}
		}
	}
	return out, nil
}
