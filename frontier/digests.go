package frontier

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The crawl's payload digests: so that content archived once is not
// archived again under another URL, the first response archived whole
// with each payload digest is noted in a hash in the first shard's slot,
// digest -> "uri\tWARC-Date (Unix ns)". A later response of any URL with
// the same payload is archived as a revisit record referring to it
// (package archive). The index is bounded: past DigestIndexCap digests it
// takes no more, and responses with a new digest are then archived whole,
// as without it (a digest costs about 180 bytes, BenchmarkVisitMemory:
// 180 MB at the cap).

// DigestIndexCap is the most payload digests the index keeps.
const DigestIndexCap = 1_000_000

var (
	//go:embed digest.lua
	digestSrc    string
	digestScript = redis.NewScript(digestSrc)
)

// digestsKey is the crawl's digest index.
func (f *Frontier) digestsKey() string { return tag(f.name, 0) + "digests" }

// Archived is a response archived whole: its URI and WARC-Date.
type Archived struct {
	URI  string
	Date time.Time
}

// ClaimPayload looks payload digest up in the crawl's index: the response
// archived with it before, found true; or, when none was (found false),
// it notes uri at date as the one that archives it, if the index has room.
// A claim whose archive then fails is taken back with UnclaimPayload.
func (f *Frontier) ClaimPayload(ctx context.Context, digest, uri string, date time.Time) (Archived, bool, error) {
	mine := uri + "\t" + strconv.FormatInt(date.UnixNano(), 10)
	v, err := digestScript.Run(ctx, f.c, []string{f.digestsKey(), f.fs[0].keys.Config}, "claim", digest, mine, DigestIndexCap).Text()
	switch {
	case errors.Is(err, redis.Nil):
		return Archived{}, false, nil
	case isGone(err):
		return Archived{}, false, ErrGone
	case err != nil:
		return Archived{}, false, fmt.Errorf("frontier: payload digests: %w", err)
	}
	u, ns, ok := strings.Cut(v, "\t")
	n, perr := strconv.ParseInt(ns, 10, 64)
	if !ok || perr != nil {
		return Archived{}, false, fmt.Errorf("frontier: payload digests: unreadable entry %q", v)
	}
	return Archived{URI: u, Date: time.Unix(0, n)}, true, nil
}

// UnclaimPayload takes back a claim of ClaimPayload (the same arguments)
// if it is still uri's: its response was not archived after all.
func (f *Frontier) UnclaimPayload(ctx context.Context, digest, uri string, date time.Time) error {
	mine := uri + "\t" + strconv.FormatInt(date.UnixNano(), 10)
	err := digestScript.Run(ctx, f.c, []string{f.digestsKey(), f.fs[0].keys.Config}, "unclaim", digest, mine, 0).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("frontier: payload digests: %w", err)
	}
	return nil
}
