// Package crawl is RedCrawl's engine: a crawl's settings and keys, seeding,
// the worker process, its status and reset.
//
// # A worker's goroutines
//
// Work flows one way, from the frontier in Redis through the fetch loops
// and back:
//
//	           Redis (frontier.Exchange: one atomic call)
//	             ▲                                  │
//	finished pages, given-back URLs            leased URLs
//	             │                                  ▼
//	  ┌──────────┴──────────────────────────────────┬──────┐
//	  │ exchanger (exchanger.go; its state: exstate.go)    │
//	  └──────▲──────────────────────────────────────┬──────┘
//	         │ entries                 ready, by window │
//	  ┌──────┴──────────────────────────────────────▼──────┐
//	  │ fetch loops × Concurrency (page.go, lease.go,      │
//	  │ read.go): admit → fetch → read → end → entry       │
//	  └────────────────────────────────────────────────────┘
//	  heartbeat (heartbeat.go): renews held leases, registers the
//	    worker, reads the scope; stops all if the crawl is gone
//	  scheduler (scheduler.go): campaigns; while elected, sweeps
//
// A fetch loop takes a leased URL from the exchanger's ready queue once
// its host's token's window opens (ready.go) and takes it to its end,
// decided once (fetchLoops.process returns it) and carried out once
// (fetchLoops.end): an entry handed back to the exchanger, which ends the lease in its next
// call: the page's record, links and counters; or, when the URL may not
// be fetched now, the URL put back (its host busy, its robots.txt
// unavailable: requeued behind the host's due time; a transient error:
// deferred, its attempts counted) or given back (its token's window
// closed first): no lease ends but in an exchange. A Crawl-delay learnt
// after the pop and a host's pause are calls of a loop's own, and end no
// lease: Hosts.SetDelay keeps the delay and says whether the URL may go
// now, Hosts.Pause marks the host. The
// exchanger alone calls frontier.Exchange: it sends entries many to a call
// and refills the ready queue in the same call, with no more URLs than
// the loops will take within their windows (crawl/pace's Policy.target, from the
// loops' own times: pace.LoopTimes). What it
// does is its state machine's to decide (exstate.go: step(event, now) →
// actions, no I/O, the timing in crawl/pace); the loop only turns what
// happens into events and performs the actions. A crawl of several shards
// (Settings.Shards) changes nothing here: a call carries pages of any
// shards, and the frontier makes it one pipeline of a call a shard
// (frontier/pipeline.go). The heartbeat renews the leases of
// everything the process holds — fetched, waiting in the ready buffer, or
// waiting to be sent — so a kill -9 loses nothing: the leases expire and
// the scheduler's sweep queues those URLs again.
//
// # Stopping
//
// Worker.Run stops in one order, stage after stage (run.go's crew): the
// context ends the fetch loops' taking of URLs (pages in progress finish);
// URLs taken after the stop go back; the exchanger sends what the loops
// handed in, gives back what they never started, and returns; the
// heartbeat and the scheduler role end (the scheduler resigns, so another
// worker takes over at once); last, the WARC file is closed and the worker
// deregisters. Whatever ends a run — the context, the crawl's end, a
// failure, the crawl gone from Redis — tells the run's ending (run.go),
// and Run alone reads it. When the crawl disappears from Redis (a forced
// reset) everything stops at once, in the same order, and Run returns an
// error wrapping ErrGone.
package crawl
