package crawl

import (
	"context"

	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/neardup"
)

// CounterNearDuplicates counts the pages found to be near copies of a page
// of their host fetched before (seed --near-duplicates mark or skip).
const CounterNearDuplicates = "near_duplicates"

// nearDuplicate looks an HTML page's main text up in its host's
// near-duplicate index (frontier/nearpages), with seed --near-duplicates
// mark or skip: a near copy of a page fetched before has its record say
// which (NearDuplicateOf) and how near; any other page joins the index.
// skip says whether the page is left out of the archive and the
// renderer (--near-duplicates skip; its record says why). A page of too
// few words to judge (neardup.MinWords) is left alone, as is every page
// while the index cannot be reached: a page wrongly taken for its own is
// archived, one wrongly taken for a copy would be lost.
func (pl *fetchLoops) nearDuplicate(ctx context.Context, lv *live, p page, r *fetch.Result, rec *Record) (skip bool) {
	if lv.s.NearDuplicates == settings.NearOff || !r.HTML || r.Status < 200 || r.Status >= 300 || p.Kind == frontier.KindSitemap {
		return false
	}
	words := neardup.Words(r.Body)
	if len(words) < neardup.MinWords {
		return false
	}
	m, err := pl.lf.near.Check(ctx, p.url.Host, p.URL, neardup.Sign(words))
	if err != nil {
		pl.log.Warn("the crawl's near-duplicate index is unavailable: the page is taken for its own", "url", p.URL, "err", err)
		return false
	}
	if m.URL == "" {
		return false
	}
	rec.NearDuplicateOf, rec.NearSimilarity = m.URL, m.Similarity
	if lv.s.NearDuplicates != settings.NearSkip {
		return false
	}
	rec.NotArchived = "near duplicate of " + m.URL
	return true
}
