package crawl

import (
	"github.com/redcrawl/crawler/crawl/settings"
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/frontier"
	"github.com/redcrawl/crawler/parse"
)

// CounterDuplicates counts the pages left as duplicates of their canonical
// URL (seed --canonical skip): not archived, their canonical queued.
const CounterDuplicates = "duplicates"

// declared is what a response says of itself before it is parsed whole:
// an HTML page's head (robots meta tags, canonical link), read once for
// the decisions taken before the archive is written.
func declared(r *fetch.Result, agent string) parse.Head {
	if !r.HTML || r.Status < 200 || r.Status >= 300 {
		return parse.Head{}
	}
	return parse.HeadOf(r.Body, agent)
}

// canonical records the canonical URL a successful response declares (a
// Link header's rel="canonical", or its head's <link rel=canonical>) when
// it is another URL of the crawl's scope (Record.Canonical), and returns
// it as a link, at the page's depth, when the crawl would follow it
// (filters and trap defences, and the page's owner did not say
// nofollow): a link like the page's others (a PDF's Link header names
// one too). With seed --canonical skip such a page is a duplicate (dup):
// its record says duplicate_of, it is not archived, and its canonical is
// the one URL it leads to.
//
// A canonical is the owner's claim that the two are one page, so a
// duplicate's own links are not followed: the canonical's are. Were the
// canonical named back (A names B, B names A), neither would be archived:
// each is recorded with its duplicate_of (docs/design.md).
func (pl *fetchLoops) canonical(lv *live, p page, r *fetch.Result, head parse.Head, rec *Record) (link *frontier.Item, dup bool) {
	if r.Status < 200 || r.Status >= 300 {
		return nil, false
	}
	c := parse.CanonicalOf(p.url, r.LinkHeaders, head, lv.s.KeepTrackingParams)
	if c == nil || c.String() == p.URL || !pl.scope.Load().Allows(c) {
		return nil, false
	}
	rec.Canonical = c.String()
	if lv.rules.Skip(c, rec.Canonical) != "" || head.Robots.NoFollow || parse.XRobotsTag(r.RobotsTags, lv.s.AgentToken()).NoFollow {
		return nil, false
	}
	if lv.s.Canonical == settings.CanonicalSkip {
		rec.DuplicateOf = rec.Canonical
	}
	canon := p.child(rec.Canonical, false)
	return &canon, lv.s.Canonical == settings.CanonicalSkip
}

// canonicalOutcome adds a page's canonical to what it leads to: the one
// URL a duplicate does (and the count), one more link of any other page.
func canonicalOutcome(o *frontier.Outcome, link *frontier.Item, dup bool) {
	switch {
	case dup:
		o.Children = []frontier.Item{*link}
		o.Also = append(o.Also, CounterDuplicates)
	case link != nil:
		o.Children = append(o.Children, *link) // queued once, if the page's links had it already
	}
}
