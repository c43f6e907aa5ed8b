package crawl

import (
	"github.com/redcrawl/crawler/fetch"
	"github.com/redcrawl/crawler/parse"
)

// noArchive: with seed --obey-noarchive, r's owner said noarchive, in
// an X-Robots-Tag header or an HTML page's robots meta tag (read before
// the page is parsed whole); rec says so.
func (pl *fetchLoops) noArchive(r *fetch.Result, rec *Record) bool {
	s := pl.cur.Load().s
	if !s.ObeyNoArchive {
		return false
	}
	switch {
	case parse.XRobotsTag(r.RobotsTags, s.AgentToken()).NoArchive:
		rec.NotArchived = "noarchive (X-Robots-Tag)"
	case r.HTML && parse.MetaRobotsOf(r.Body, s.AgentToken()).NoArchive:
		rec.NotArchived = "noarchive (robots meta tag)"
	default:
		return false
	}
	return true
}
