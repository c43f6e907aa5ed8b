package payloads

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redis/go-redis/v9"
)

// Across crawls (seed --dedup-from): a crawl's digests join what later
// crawls refer to only when it completes, so that a crawl reset or failed
// half-way gives later ones nothing to refer to that its archive may not
// hold. The scheduler commits the index when it finds the crawl over:
// commit.lua copies it whole to the committed index, "digests:committed"
// in the first shard's slot, with when (field '#'). A later crawl that
// names the crawl in --dedup-from looks each payload up there first
// (ClaimAllFrom) and writes a revisit referring to the earlier crawl's
// record. The copy is made again at each completion (a recrawl, a seed
// that reopened the crawl), and is the crawl's until it is reset: a
// complete crawl's digests are held twice (a million of 33-byte URLs:
// 144 MB each, measured on redis-server 7.0).

var commitScript = lua.Script("commit")

// committedKey is crawl name's committed index.
func committedKey(name string) string { return keyspace.Tag(name, 0) + "digests:committed" }

// ErrNotComplete: Commit found the crawl running, or reopened since it
// completed.
var ErrNotComplete = errors.New("the crawl is not complete")

// Commit copies the crawl's index to its committed index, if the crawl is
// complete (its done flag set), and returns the digests committed. One
// call, O(digests) in Redis (a million: 0.6-0.8 s); idempotent, so a
// scheduler that commits twice, or late, commits the same.
func (f Index) Commit(ctx context.Context) (int64, error) {
	k := f.Keys[0]
	n, err := commitScript.Run(ctx, f.C, []string{f.key(), committedKey(f.Name), k.DoneFlag, k.Config}).Int64()
	switch {
	case keyspace.IsGone(err):
		return 0, keyspace.ErrGone
	case err != nil:
		return 0, fmt.Errorf("frontier: committing the payload digests: %w", err)
	case n < 0:
		return 0, ErrNotComplete
	}
	return n, nil
}

// Committed says whether crawl name's digests were committed, when, and
// how many.
func Committed(ctx context.Context, c redis.UniversalClient, name string) (at time.Time, digests int64, ok bool, err error) {
	k := committedKey(name)
	pipe := c.Pipeline()
	when, size := pipe.HGet(ctx, k, "#"), pipe.HLen(ctx, k)
	if _, err := pipe.Exec(ctx); errors.Is(err, redis.Nil) {
		return time.Time{}, 0, false, nil
	} else if err != nil {
		return time.Time{}, 0, false, fmt.Errorf("frontier: committed payload digests of %s: %w", name, err)
	}
	ms, err := strconv.ParseInt(when.Val(), 10, 64)
	if err != nil {
		return time.Time{}, 0, false, fmt.Errorf("frontier: committed payload digests of %s: unreadable time %q", name, when.Val())
	}
	return time.UnixMilli(ms), size.Val() - 1, true, nil
}

// ClaimAllFrom is ClaimAll, each payload first looked up in the committed
// indexes of the crawls from (one HMGET a crawl, pipelined: each is in
// its own slot), the first that holds it winning: a payload an earlier
// crawl archived whole is found archived there (and noted so in this
// crawl's index), unless this crawl archived it first.
func (f Index) ClaimAllFrom(ctx context.Context, from []string, claims []Claim) ([]Archived, []bool, error) {
	if len(from) > 0 && len(claims) > 0 {
		digests := make([]string, len(claims))
		for i, c := range claims {
			digests[i] = c.Digest
		}
		pipe := f.C.Pipeline()
		got := make([]*redis.SliceCmd, len(from))
		for i, name := range from {
			got[i] = pipe.HMGet(ctx, committedKey(name), digests...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, nil, fmt.Errorf("frontier: earlier crawls' payload digests: %w", err)
		}
		for i := range claims {
			claims[i].earlier = ""
			for _, g := range got {
				if v, ok := g.Val()[i].(string); ok {
					if _, err := parseEntry(v); err != nil {
						return nil, nil, err
					}
					claims[i].earlier = v
					break
				}
			}
		}
	}
	return f.ClaimAll(ctx, claims)
}
