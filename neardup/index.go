package neardup

import (
	"context"
	_ "embed"
	"fmt"
	"math"

	"github.com/redcrawl/crawler/internal/script"
	"github.com/redis/go-redis/v9"
)

//go:embed index.lua
var indexSrc string

var indexScript = script.New("neardup/index", indexSrc)

// An Index is one host's near-duplicate index in Redis, under Prefix
// (its keys: Prefix + "bands", "pages", "order"; one hash slot, so give
// the prefix a hash tag): the MinHash signatures of at most Max of its
// pages, the oldest leaving first, banded for LSH.
type Index struct {
	C      redis.Scripter
	Prefix string
	Max    int
	// Threshold is the estimated Jaccard similarity (the fraction of
	// values agreeing) from which a page is a near duplicate.
	Threshold float64
	// Guard, when set, is a key that must exist (its owner's, a crawl's
	// config, in the same slot): when it does not, Check writes nothing
	// and fails with a Redis error that begins "GONE".
	Guard string
	// Shared, when set, is a counter in the same slot that indexes of
	// several hosts share (a crawl's shard): the pages they hold in all.
	// At SharedCap a page is still looked up, but not indexed.
	Shared    string
	SharedCap int
}

// A Match is the earlier page a page is a near duplicate of (URL "":
// none), and the similarity of the two (the fraction of their signatures'
// values that agree; of the nearest candidate when none matched).
type Match struct {
	URL        string
	Similarity float64
}

// Check is the earlier page of the index that the page at url (signature
// sig) is a near duplicate of; when none, the page is indexed, as one
// a later page may be a near duplicate of. One script call.
func (x Index) Check(ctx context.Context, sig Signature, url string) (Match, error) {
	need := int(math.Ceil(x.Threshold * Hashes))
	keys := []string{x.Prefix + "bands", x.Prefix + "pages", x.Prefix + "order"}
	if x.Guard != "" {
		keys = append(keys, x.Guard)
	}
	shared := 0
	if x.Shared != "" {
		keys, shared = append(keys, x.Shared), max(x.SharedCap, 1)
	}
	v, err := indexScript.Run(ctx, x.C, keys, sig.Bytes(), url, need, max(x.Max, 1), Bands, flag(x.Guard != ""), shared).Slice()
	if err != nil {
		return Match{}, fmt.Errorf("neardup: %w", err) // wrapped: a GONE reply is still one (redis.Error)
	}
	if len(v) != 2 {
		return Match{}, fmt.Errorf("neardup: reply %v", v)
	}
	u, _ := v[0].(string)
	n, _ := v[1].(int64)
	return Match{URL: u, Similarity: float64(n) / Hashes}, nil
}

// flag is a boolean as the script's argument.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
