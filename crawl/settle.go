package crawl

import (
	"context"

	"github.com/redcrawl/crawler/frontier"
)

// What the exchanger does once a call went through: the pages it sent are
// recorded (or, refused by Redis, marked as another worker's), and the URLs
// it popped go to the fetch loops.

// settle records what a call that went through did, and hands out the
// URLs it popped.
func (x *exchanger) settle(work context.Context, r reply) {
	if x.s.budget {
		x.pages.Store(r.res.Info.Pages)
	}
	x.counters.Exchanges.Add(1)
	x.counters.Sent.Add(int64(len(r.batch)))
	if r.want > 0 && len(r.res.Popped)+len(r.res.Again) == 0 && len(r.batch) == 0 {
		x.counters.EmptyPops.Add(1) // a call for nothing
	}
	x.late(r)
	for i, e := range r.batch {
		x.held.Delete(e.lease().ID)
		if e.back != nil || e.page.Outcome.PutBack != nil {
			continue // no page: nothing to record (a lost lease's URL is queued again by the sweep)
		}
		if !r.res.Held[i] {
			x.refused(e.rec)
		}
		x.recorded(r.sent[i], e.rec, r.res.Queued[i], r.res.Held[i])
	}
	if x.robots != nil && len(r.res.Popped) > 0 {
		urls := make([]string, len(r.res.Popped))
		for i, l := range r.res.Popped {
			urls[i] = l.Item.URL
		}
		// The loops ask robots.txt of each URL as they take it, one at a
		// time: what Redis holds for these hosts is read here, together.
		x.robots.Warm(work, urls)
	}
	ready := make([]leased, 0, len(r.res.Again)+len(r.res.Popped))
	for _, l := range r.res.Again { // still held, under a new token
		x.held.Store(l.ID, l)
		ready = append(ready, leased{l, r.res.Info})
	}
	for _, l := range r.res.Popped {
		x.held.Store(l.ID, l)
		x.known.add(l.Item.URL) // a URL handed out is seen: links to it need no Redis work
		ready = append(ready, leased{l, r.res.Info})
	}
	x.ready.add(ready...)
}

// late counts what became of the URLs of r's batch that missed their
// tokens' windows: given a new token by their hosts (retokened, back in
// the ready buffer) or put back (late).
func (x *exchanger) late(r reply) {
	eachLate(r, func(_ *frontier.Lease, kept bool) {
		if kept {
			x.counters.Retokened.Add(1)
			x.metrics.retokened.Inc()
			return
		}
		x.counters.PutBack.Add(1)
		x.counters.Late.Add(1)
		x.metrics.late.Inc()
	})
}

// eachLate calls f with each lease of r's batch handed back because its
// token's window closed, and whether its host gave it a new token (kept,
// in r's Again) or took it back.
func eachLate(r reply, f func(l *frontier.Lease, kept bool)) {
	kept := make(map[*frontier.Lease]bool, len(r.res.Again))
	for _, l := range r.res.Again {
		kept[l] = true
	}
	for _, e := range r.batch {
		if e.late > 0 {
			f(e.back, kept[e.back])
		}
	}
}

// refused: Redis no longer held the lease of a finished page (it lapsed
// while this worker was paused or cut off from Redis, and the URL went to
// another worker), so its outcome was not recorded. Its WARC records, if
// any, are marked as a duplicate of the other worker's.
func (x *exchanger) refused(rec Record) {
	x.counters.Refused.Add(1)
	x.metrics.refused.Inc()
	x.log.Warn("a finished page's lease had lapsed: Redis refused its outcome, another worker has the URL", "url", rec.URL)
	if x.warc == nil || rec.WARC == nil {
		return
	}
	if err := x.warc.MarkDuplicate(*rec.WARC, rec.URL, "its lease lapsed before its exchange: the crawl gave the URL to another worker"); err != nil {
		x.log.Error("marking a refused page's WARC record as a duplicate failed", "url", rec.URL, "file", rec.WARC.File, "err", err)
	}
}

// recorded: a page's exchange went through with the links sent, of which
// those flagged in queued were new to the crawl.
func (x *exchanger) recorded(sent []frontier.Item, rec Record, queued []bool, held bool) {
	for _, ch := range sent {
		x.known.add(ch.URL) // marked seen whether or not the lease was held
	}
	if x.out == nil || rec.URL == "" || !held {
		return
	}
	for _, q := range queued {
		if q {
			rec.NewLinks++
		}
	}
	x.out.write(rec)
}
