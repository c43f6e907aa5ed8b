// Package nearpages is the crawl's near-duplicate index (seed
// --near-duplicates): each host's pages' MinHash signatures (package
// neardup), under the host's shard, so that any worker finds a page's
// near copy among the pages of its host fetched before.
package nearpages

import (
	"context"

	"github.com/redcrawl/crawler/frontier/keyspace"
	"github.com/redcrawl/crawler/neardup"
)

// Each host's index is three keys in its shard's slot,
// near:<host>:bands, near:<host>:pages and near:<host>:order (neardup.Index
// says what each holds): about 1,130 bytes a page (neardup
// TestTheIndexsBytesAPage) for at most PerHost pages, the oldest leaving
// first; a host of more pages keeps its latest PerHost, 11 MB at most.
// The crawl's indexes hold at most CrawlCap pages in all, each shard a
// share of it counted in its "near pages" (a host name has no space):
// past it a page is still looked up, but no new page is indexed (1.1 GB
// at most; a host's eviction makes room again).
const (
	PerHost  = 10_000
	CrawlCap = 1_000_000
	// Threshold: pages whose signatures agree on half their values or
	// more are near duplicates (docs/design.md says how it was chosen).
	Threshold = 0.5
)

// Index is the crawl's index, frontier.Frontier.Near.
type Index struct{ keyspace.Set }

// of is host's index.
func (x Index) of(host string) neardup.Index {
	i, k := x.For(host)
	tag := keyspace.Tag(x.Name, i)
	return neardup.Index{C: x.C, Prefix: tag + "near:" + host + ":", Max: PerHost, Threshold: Threshold, Guard: k.Config,
		Shared: tag + "near pages", SharedCap: (CrawlCap + len(x.Keys) - 1) / len(x.Keys)}
}

// Check is the earlier page of host that the page at url (of words'
// signature sig) is a near duplicate of, if any (Match.URL ""); when
// none, the page is indexed. A page found again (fetched anew, retried)
// matches itself: it is no one's duplicate, and Check says none. One
// script call; keyspace.ErrGone when the crawl is gone.
func (x Index) Check(ctx context.Context, host, url string, sig neardup.Signature) (neardup.Match, error) {
	m, err := x.of(host).Check(ctx, sig, url)
	switch {
	case keyspace.IsGone(err):
		return neardup.Match{}, keyspace.ErrGone
	case err != nil:
		return neardup.Match{}, err
	case m.URL == url:
		return neardup.Match{Similarity: m.Similarity}, nil
	}
	return m, nil
}
