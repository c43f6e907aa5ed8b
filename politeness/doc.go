// Package politeness keeps a crawl polite across every worker at once: a
// token bucket per host, kept in Redis and decided by a Lua script.
//
// # The token bucket
//
// A bucket holds up to b tokens and gains r tokens a second; a request takes
// one (or n) and may go ahead only when they are there. Over any interval t,
// at most r·t + b requests pass, however they are spread, unlike a fixed
// window, which lets 2× the rate through across a window boundary.
//
// # Protocol
//
// A bucket is one number, its tat ("theoretical arrival time", GCRA): the
// moment it is full again. At time t it holds b tokens when tat <= t, and
// b - (tat - t)·r otherwise. Taking n tokens moves tat to max(tat, t) plus
// n intervals (1/r each), and they may be used once the new tat less b
// intervals has come: a full bucket lets b go at once, an empty one one an
// interval. bucket.lua is the whole decision: read tat, take n tokens
// (tb_take) or compute the wait, write tat back, set its expiry: one
// atomic script, so N workers on M machines share one bucket and together
// get r, not N·r.
//
// One clock: the time comes from Redis TIME inside the script, in
// microseconds. A worker's clock never enters the decision, so workers with
// skewed clocks cannot disagree, and refill is smooth rather than in
// one-second steps.
//
// It is golang.org/x/time/rate's token bucket, counted in time rather than
// in tokens: AllowN and ReserveN decide as a local rate.Limiter would on the
// same clock, their delays equal to the microsecond (the oracle test checks
// this on random sequences; the two roundings can differ only on a tie, the
// tokens within a microsecond's refill of n). The arithmetic runs relative
// to now, where a float64 keeps the fractions of a microsecond that an
// absolute time would round away. A refused reservation changes nothing.
//
// Cancel gives a reservation's tokens back when its event will not
// happen, by tokens.lua's tb_refund (refund.lua), the rule by which the
// crawler's pop takes back the token of a request that never went: only
// the bucket's last tokens, while their time has not come, so that the
// bucket is as if the reservation had never been made (the oracle test
// replays x/time/rate without it); tokens taken before others still held
// stay taken, since giving them back would move the later ones' times.
//
// # One arithmetic, two scripts
//
// tokens.lua holds the arithmetic as Lua functions, a module that
// bucket.lua requires (Lua), and so does the crawler's pop (frontier's
// handout.lua): there a host's token is taken (tb_take) in the atomic call
// that grants its URL, leased by the next script of the same pipeline
// (take.lua), and a host whose bucket is empty is not offered until it
// has a token, so a fetch never asks for one
// (docs/design.md, "A token per pop"). The Limiter keeps its tat in the
// bucket's hash; the pop keeps a host's as the score that schedules the
// host in its ready set, so that taking a token is the ZADD that moves it.
// One bucket, one arithmetic: the Limiter is that primitive on its own,
// for any key. What the crawler adds to it (a host's Crawl-delay, adaptive
// politeness, a first request let go when a delay is learnt, pauses read
// only for marked hosts) is frontier's, and documented there.
//
// # A token handed out ahead of its use
//
// A token the pop takes goes to a worker and waits there for a fetch loop,
// so it cannot mean "now". TokenWindow (tb_window in tokens.lua) makes it
// a window of time: its slot is where the bucket's schedule put it, an
// interval after the one before, and its request may go from a little
// before the slot to a little after it. The window is (burst - ½)
// intervals wide, or LeastWindow (10 ms) where that is longer, and
// requests that each keep to theirs hold the bucket's bound rounded to the
// nearest whole request: in any span W, at most ⌈(W + width)·rate⌉. The
// rule is decided once, where the token is taken; the worker reads the
// window off the reply and checks it with a clock, nothing more
// (frontier.Lease.NotBefore, Deadline). A request that missed its window
// asks the bucket again by the same rule, popped again first in its
// worker's next exchange (frontier.Lease.Late), never by a second rule of
// its own.
//
// # Keys
//
//	<key>   hash {tat} (µs, Redis's clock); PEXPIRE = until the bucket is full again;
//	        a pause adds paused_until and pauses (pause.lua). A user may keep
//	        fields of its own beside them: the crawler keeps its tokens as
//	        the host's score in frontier's ready set instead, and its own
//	        fields for the host here (frontier/doc.go says which)
//
// A bucket that would be full is the same as a missing one, so every key
// expires once its host goes idle: the number of keys is bounded by the hosts
// crawled recently, not all hosts ever crawled. The crawler gives each host
// its own hash tag, so buckets spread across a Redis Cluster.
//
// # Edge cases
//
// n > b is an immediate ErrExceedsBurst (it could never succeed). Rate 0
// admits nothing; rate Inf admits everything without calling Redis.
// On a Redis error the caller gets the error, not a permission: the crawler
// then defers the URL rather than fetching impolitely.
//
// # robots.txt
//
// Robots is the cluster-wide robots.txt cache. Each host's file is fetched
// by one worker per TTL (24 h): the worker that wins a short SET NX lock
// fetches it (following up to five redirects) and stores status and body in
// Redis; the others wait for that entry (or defer their URL on
// ErrRobotsPending). RFC 9309: 2xx is obeyed for our product token's group,
// 4xx allows all. No answer, 5xx (or 429) means "crawl nothing of this
// host now" — not never: Check returns an *UnavailableError (errors.Is
// ErrRobotsUnavailable) until the next try, which one worker makes when it
// is due. The back-off is kept in Redis (robots_fail.lua, server time), so
// every worker waits the same: Backoff (1 s) after the first failure,
// doubling to MaxBackoff (5 min). The error carries how long the file has
// been unavailable, so the crawler can give the host's URLs up after a
// while — as failed, never as "disallowed". Crawl-delay is reported so the
// crawler can keep that host's own interval in its bucket.
//
// A process asks Redis once per host: its fetch loops share one lookup of
// a host (singleflight) and keep the answer (MaxLocal hosts). The lookups
// of different hosts share round trips: whatever the loops ask while a
// pipeline is in flight goes in the next (robots_batch.go), so the
// hundreds of hosts a crawl meets in its first seconds cost Redis a few
// round trips, not a few each. Warm reads the stored answers for a batch
// of URLs in one round trip: a crawler calls it with the URLs a pop handed
// it, before its loops take them one by one.
//
//	<prefix>{host}        hash {status, body}, PEXPIRE TTL; while unavailable
//	                      {status, failures, first_fail, retry_at} (ms, server
//	                      clock), kept an hour past retry_at
//	<prefix>{host}:lock   the fetching worker's token, PX LockTTL
package politeness
