// Package payloads is the crawl's index of payload digests archived
// (--dedup-payloads): a response whose payload another URL's response
// already archived whole is archived as a revisit record referring to it.
package payloads

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/frontier/queue"
	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

// The crawl's payload digests: so that content archived once is not
// archived again under another URL, the first response archived whole
// with each payload digest is noted in a hash in the first shard's slot,
// digest -> "uri\tWARC-Date (Unix ns)". A later response of any URL with
// the same payload is archived as a revisit record referring to it
// (package archive). The index is bounded: past IndexCap digests it
// takes no more, and responses with a new digest are then archived whole,
// as without it (a digest costs about 180 bytes, BenchmarkVisitMemory:
// 180 MB at the cap).

// Index is the index, the first shard's hash "digests":
// frontier.Frontier.Digests.
type Index struct{ keyspace.Set }

// IndexCap is the most payload digests the index keeps.
const IndexCap = 1_000_000

var (
	//go:embed digest.lua commit.lua
	luaFiles     embed.FS
	lua          = script.NewLib("frontier/payloads", luaFiles, queue.Lua)
	digestScript = lua.Script("digest")
)

// key is the crawl's digest index.
func (f Index) key() string { return keyspace.Tag(f.Name, 0) + "digests" }

// Archived is a response archived whole: its URI and WARC-Date.
type Archived struct {
	URI  string
	Date time.Time
}

// Claim is one response's claim of its payload digest (ClaimAll).
type Claim struct {
	Digest string
	URI    string
	Date   time.Time // the response's WARC-Date
	// earlier is the entry an earlier crawl's committed index holds for
	// the digest ("": none; ClaimAllFrom looks it up).
	earlier string
}

func (c Claim) entry() string { return c.URI + "\t" + strconv.FormatInt(c.Date.UnixNano(), 10) }

// ClaimAll looks each claim's payload digest up in the crawl's index,
// in one call: the response archived with it before (found true), or, when
// none was (found false), it notes the claim's response as the one that
// archives it, if the index has room. A claim whose archive then fails is
// taken back with Unclaim.
func (f Index) ClaimAll(ctx context.Context, claims []Claim) ([]Archived, []bool, error) {
	args := make([]any, 0, 2+3*len(claims))
	args = append(args, "claim", IndexCap)
	for _, c := range claims {
		args = append(args, c.Digest, c.entry(), c.earlier)
	}
	res, err := digestScript.Run(ctx, f.C, []string{f.key(), f.Keys[0].Config}, args...).Slice()
	switch {
	case keyspace.IsGone(err):
		return nil, nil, keyspace.ErrGone
	case err != nil:
		return nil, nil, fmt.Errorf("frontier: payload digests: %w", err)
	case len(res) != len(claims):
		return nil, nil, fmt.Errorf("frontier: payload digests: %d answers for %d claims", len(res), len(claims))
	}
	got, found := make([]Archived, len(claims)), make([]bool, len(claims))
	for i, r := range res {
		v, ok := r.(string)
		if !ok {
			continue // nil: not found, claimed
		}
		a, err := parseEntry(v)
		if err != nil {
			return nil, nil, err
		}
		got[i], found[i] = a, true
	}
	return got, found, nil
}

// parseEntry reads an index's entry, "uri\tdate-ns".
func parseEntry(v string) (Archived, error) {
	u, ns, ok := strings.Cut(v, "\t")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil {
		return Archived{}, fmt.Errorf("frontier: payload digests: unreadable entry %q", v)
	}
	return Archived{URI: u, Date: time.Unix(0, n)}, nil
}

// Claim is ClaimAll of one claim.
func (f Index) Claim(ctx context.Context, digest, uri string, date time.Time) (Archived, bool, error) {
	got, found, err := f.ClaimAll(ctx, []Claim{{Digest: digest, URI: uri, Date: date}})
	if err != nil {
		return Archived{}, false, err
	}
	return got[0], found[0], nil
}

// Unclaim takes back a claim of ClaimAll if it is still that
// response's: it was not archived after all.
func (f Index) Unclaim(ctx context.Context, digest, uri string, date time.Time) error {
	err := digestScript.Run(ctx, f.C, []string{f.key(), f.Keys[0].Config}, "unclaim", 0, digest, Claim{Digest: digest, URI: uri, Date: date}.entry(), "").Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("frontier: payload digests: %w", err)
	}
	return nil
}
