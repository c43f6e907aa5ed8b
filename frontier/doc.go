// Package frontier is a crawl's reliable queue in Redis: no URL is lost,
// however a worker dies.
//
// # Keys (all under the crawl's hash tag crawl:{name})
//
//	queue      list of items (JSON); new items LPUSHed, popped from the right: breadth first
//	inflight   hash lease-id -> item, for every item a worker holds
//	leases     zset lease-id -> lease expiry (ms, Redis TIME)
//	deferred   zset item -> time it may be fetched again (ms, Redis TIME)
//	failed     list of items that failed for good, with the reason (capped)
//	workers    zset worker -> last heartbeat (ms)
//	stats      hash of counters (enqueued, done, failed, ...)
//
// # Protocol
//
// Enqueue is dedup's Bloom test-and-set and the LPUSH of the new URLs in one
// script (enqueue.lua appended to dedup's bloom.lua): a URL is never marked
// seen without being queued, so a crash between the two cannot lose it.
//
// Pop moves the item from the queue into inflight under a lease, in one
// script: the item is never only in a worker's memory. The worker acks it
// only after the page's children are enqueued. A live worker's heartbeat
// (Heartbeat, every few seconds) extends its leases; a worker that is killed
// stops extending them, and within one lease length (10 s by default) the
// scheduler's sweep puts its items back on the queue with attempts+1, or on
// the failed list at the maximum. A late ack of a reclaimed item is refused
// (ErrLeaseLost) and changes nothing; at worst the page is fetched twice.
//
// Defer hands an item back to be fetched after a delay (its host is
// throttled, or the server said Retry-After): never dropped, never spun on.
//
// # The scheduler's sweep
//
// Schedule runs only in the elected leader and is a leader.FencedScript:
// a sweep by a leader whose epoch is no longer the newest is refused whole.
// It moves due deferred items to the front of the queue and expired leases
// back to the queue (or to failed). All times are Redis TIME.
package frontier
