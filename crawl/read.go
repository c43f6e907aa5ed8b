package crawl

// Reading an answered fetch, to the end process returns: archived (as a
// revisit when its content is archived already), retried when the server
// said "not now", rendered by a render worker, and its outcome: the links
// it leads to, its stat, what its next visit compares against.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/frontier/recrawl"
	"github.com/redcrawl/crawler/parse"
)

// A holder is a lease as reading its page needs it: how long it is surely
// still held (frontier.Lease.Left).
type holder interface{ Left() time.Duration }

// A page is a fetched URL as reading its answer needs it: the item as it
// was leased, its URL parsed, the visit it was fetched with, and whether
// its lease is still held (held: the lease, read for no more than that).
type page struct {
	frontier.Item
	url   *url.URL
	visit *recrawl.Visit // nil: the URL's first fetch
	held  holder
	start time.Time // when the request went out
}

// child is a link of p, one step further from the seed (deeper) or at
// its depth (a redirect's target, its canonical).
func (p page) child(link string, deeper bool) frontier.Item {
	d := p.Depth
	if deeper {
		d++
	}
	return frontier.Item{URL: link, Depth: d, Parent: p.URL}
}

// read takes p's answer r to its end.
func (pl *fetchLoops) read(ctx context.Context, p page, r *fetch.Result, rec Record) end {
	lv := pl.cur.Load() // what the response yields is read under one version of the settings
	rec.SettingsVersion = lv.s.Version
	head := declared(r, lv.s.AgentToken())
	canon, dup := pl.canonical(lv, p, r, head, &rec)      // with --canonical skip, a duplicate is not archived
	near := !dup && pl.nearDuplicate(ctx, lv, p, r, &rec) // with --near-duplicates skip, nor a near copy
	// Archived: every response whose body was read, but HTML only when the
	// crawl keeps HTML (it is always read, for its links).
	var archived *recrawl.Visit // where the content this answer stands for is archived whole
	archivable := pl.warc != nil && r.Raw != nil && !r.DroppedBody && !dup && !near &&
		(!r.HTML || lv.s.Keeps(r.ContentType) || r.Status == http.StatusNotModified && p.visit != nil && p.visit.RefDate != 0)
	if archivable && !pl.noArchive(lv, r, head, &rec) { // with --obey-noarchive, what its owner said not to archive is recorded only
		loc, digest, ref, err := pl.archive(ctx, p, r)
		if err != nil {
			return unarchived(err)
		}
		rec.WARC, rec.PayloadDigest, archived = &loc, digest, ref
	}
	if fetch.TransientStatus(r.Status) {
		return pl.notNow(ctx, p.url.Host, rec, r)
	}
	plain := r
	if pl.render != nil && !dup && !near {
		var e end
		if r, e = pl.rendered(ctx, lv, p, r, &rec); e.ended() {
			return e
		}
	}
	o := pl.outcome(ctx, lv, p, r, &rec, archived)
	canonicalOutcome(&o, canon, dup)
	if rec.NearDuplicateOf != "" {
		o.Also = append(o.Also, CounterNearDuplicates)
	}
	if err := pl.laneMatches(ctx, lv, o.Children); err != nil {
		// Queued now, a link could be popped by a plain worker: the page
		// is retried once Redis answers.
		return retry(rec, fmt.Sprintf("putting a host in the render lane: %v", err), 0)
	}
	// The sample is offered before the page's lease ends: a crawl whose
	// only page so far is this one would otherwise be found over (nothing
	// queued, leased or sampled) in between, its scripts' links never
	// rendered.
	pl.offerSample(ctx, lv, p, plain)
	return finish(rec, o)
}

// outcome is what an answered fetch leaves: its links (a page's, a
// sitemap's; none for 304 Not Modified), its stat, and what the next
// visit compares against.
func (pl *fetchLoops) outcome(ctx context.Context, lv *live, p page, r *fetch.Result, rec *Record, archived *recrawl.Visit) frontier.Outcome {
	o := frontier.Outcome{Stat: OutcomeOK, Fetched: true, FetchTime: r.Duration}
	digest := rec.PayloadDigest
	switch {
	case r.Status == http.StatusNotModified && p.visit != nil:
		// Unchanged since the validators were given: no body, no links.
		o.Stat, digest = OutcomeUnchanged, p.visit.Digest
		rec.PayloadDigest = digest
	case p.Kind == frontier.KindSitemap:
		o.Children = pl.sitemapRoom(ctx, lv, p.url.Host, pl.sitemapLinks(lv, p, r, rec))
	default:
		o.Children = pl.links(ctx, lv, p, r, rec)
	}
	if r.Status >= 400 {
		o.Stat = OutcomeHTTPError
	}
	if rec.LinksCut > 0 {
		o.Also = append(o.Also, CounterLinksCut)
	}
	if p.Kind != frontier.KindSitemap {
		if digest == "" && lv.s.KeepVisits { // compared at the next fetch: kept only with a visit
			digest = answerDigest(r.Body, rec.Headers)
		}
		revisitOutcome(lv.s, p.visit, rec, &o, digest, archived)
		o.Change = rec.Change
	}
	return o
}

// links are the URLs a response leads to, in scope and within the depth
// limit: a redirect's target (at the same depth: a redirect is not a step
// further from the seed) and an HTML page's links.
func (pl *fetchLoops) links(ctx context.Context, lv *live, p page, r *fetch.Result, rec *Record) []frontier.Item {
	var children []frontier.Item
	scope := pl.scope.Load()
	if !scope.Allows(p.url) && pl.rescope != nil {
		// The page's own host is outside the scope this worker read: a
		// seed added since (its host joined the scope after the worker's
		// last heartbeat). Read the scope now, or the seed's links would
		// be refused, and its site never crawled. One SCARD when nothing
		// was added.
		if err := pl.rescope(ctx); err == nil {
			scope = pl.scope.Load()
		}
	}
	// What the page's owner says of it, in its headers (any response: a
	// PDF can say it nowhere else) and, below, its robots meta tags.
	robots := parse.XRobotsTag(r.RobotsTags, lv.s.AgentToken())
	rec.Robots = robots.Words()
	if r.Location != "" {
		if t, err := parse.CanonicalizeKeeping(nil, r.Location, lv.s.KeepTrackingParams); err == nil {
			rec.Redirect = t.String()
			if scope.Allows(t) && pl.follow(lv, t, rec.Redirect) {
				children = append(children, p.child(rec.Redirect, false))
			}
		}
	}
	if !r.HTML || r.Status < 200 || r.Status >= 300 {
		return children
	}
	doc := parse.ExtractBytes(p.url, r.Body, parse.Limits{KeepTracking: lv.s.KeepTrackingParams, MaxLinks: lv.s.MaxLinks,
		Agent: lv.s.AgentToken(), Memo: pl.memo}, lv.fields...)
	header := robots.NoFollow
	robots.Merge(doc.Robots)
	rec.Robots = robots.Words()
	if header { // X-Robots-Tag: nofollow (a meta tag's is parse's already)
		doc.Links, doc.Truncated, doc.Cut = nil, false, 0
	}
	rec.Title, rec.Links, rec.Extract = doc.Title, len(doc.Links), doc.Fields
	if doc.Truncated {
		rec.LinksCut = doc.Cut // counted with the record (page's Outcome.Also)
	}
	if lv.s.MaxDepth >= 0 && p.Depth >= lv.s.MaxDepth {
		return children
	}
	for _, link := range doc.Links {
		if lu, err := url.Parse(link); err == nil && scope.Allows(lu) && pl.follow(lv, lu, link) {
			children = append(children, p.child(link, true))
		}
	}
	return children
}

// follow applies the crawl's filters and trap defences to a discovered
// URL, counting the reason of a refusal.
func (pl *fetchLoops) follow(lv *live, u *url.URL, canonical string) bool {
	if reason := lv.rules.Skip(u, canonical); reason != "" {
		pl.skips.add(reason)
		pl.metrics.skipped.WithLabelValues(reason).Inc()
		return false
	}
	return true
}
