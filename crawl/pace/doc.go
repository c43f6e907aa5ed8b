// Package pace is when a worker's exchanger calls Redis, and for how
// many URLs: the timing half of its state machine (crawl's exstate.go),
// with no I/O and on the clock it is given. Few calls, each a batch of
// finished pages and one pop; in a rate-limited crawl no more URLs popped
// than the fetch loops will start within their tokens' windows (their
// demand, from how long their recent URLs kept them: LoopTimes), and pops
// a gap apart (PopTiming) when the hosts' tokens, not the loops, are the
// limit. policy_test.go drives a Policy step by step on a fake clock.
package pace
