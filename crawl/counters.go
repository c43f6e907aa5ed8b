package crawl

import "sync/atomic"

// Counters are this process's own tallies.
type Counters struct {
	// How the URLs this process finished ended (see the Outcome words).
	OK, HTTPError, Failed, Skipped, Unchanged atomic.Int64
	// Requests counts HTTP requests made (retries too); PutBack, URLs
	// handed back to the frontier for later (host busy, retry, robots.txt
	// unavailable).
	Requests, PutBack atomic.Int64
	// Late counts URLs given back because their token's window closed
	// before a loop could fetch them (counted in PutBack too).
	Late atomic.Int64
	// Retokened counts URLs whose token's window closed before a loop
	// could fetch them, and that their host gave a new token in the next
	// exchange (frontier.Lease.Late): fetched, not given back.
	Retokened atomic.Int64
	// Lapsed counts URLs whose lease this worker no longer surely held
	// when it was about to fetch or archive them (it was paused, or cut off
	// from Redis, past the lease): handed back unfetched, or fetched but
	// neither archived nor recorded. Refused counts finished pages whose
	// lease Redis no longer held at their exchange: not recorded, their
	// WARC records marked as duplicates.
	Lapsed, Refused atomic.Int64
	// Exchanges counts calls to the frontier, EmptyPops those that only
	// wanted URLs and got none, Sent the pages they carried.
	Exchanges, EmptyPops, Sent atomic.Int64
	// Rendered counts pages rendered in a browser, Subresources the
	// requests their pages made (counted in Requests too), SubresourceHits
	// those the cache answered without a request.
	// SubresourcesRefused, those refused for leaving the crawl's scope;
	// RenderCalls, the Redis calls rendering made (tokens, samples, lanes,
	// prefixes), beyond the exchanges every page shares.
	Rendered, Subresources, SubresourceHits, SubresourcesRefused, RenderCalls atomic.Int64
}

// Pages is how many pages this process finished, by any outcome.
func (c *Counters) Pages() int64 {
	return c.OK.Load() + c.HTTPError.Load() + c.Failed.Load() + c.Skipped.Load() + c.Unchanged.Load()
}

// count tallies an outcome.
func (c *Counters) count(outcome string) {
	switch outcome {
	case OutcomeOK:
		c.OK.Add(1)
	case OutcomeHTTPError:
		c.HTTPError.Add(1)
	case OutcomeFailed:
		c.Failed.Add(1)
	case OutcomeSkipped:
		c.Skipped.Add(1)
	case OutcomeUnchanged:
		c.Unchanged.Add(1)
	}
}
