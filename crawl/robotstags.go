package crawl

import (
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/parse"
)

// noArchive: with seed --obey-noarchive, r's owner said noarchive, in
// an X-Robots-Tag header or an HTML page's robots meta tag (its head,
// read before the page is parsed whole); rec says so.
func (pl *fetchLoops) noArchive(lv *live, r *fetch.Result, head parse.Head, rec *Record) bool {
	s := lv.s
	if !s.ObeyNoArchive {
		return false
	}
	switch {
	case parse.XRobotsTag(r.RobotsTags, s.AgentToken()).NoArchive:
		rec.NotArchived = "noarchive (X-Robots-Tag)"
	case head.Robots.NoArchive:
		rec.NotArchived = "noarchive (robots meta tag)"
	default:
		return false
	}
	return true
}
