// Package slots is a counting semaphore in Redis whose slots are leases:
// at most N holders at once, across every process and machine that shares
// the key, and no slot held for ever by a holder that died. It is the
// crawler's fourth coordination primitive, beside the lock (leader/), the
// Bloom filter (dedup/) and the token bucket (politeness/): the bucket
// bounds how often a host is asked, a semaphore how many requests wait on
// it at once (seed --host-concurrency).
//
// # Protocol
//
// A semaphore is one sorted set: holder -> the time its slot lapses (ms,
// Redis's clock, read inside the script with TIME; no worker's clock
// enters). Acquire is one atomic script (acquire.lua):
//
//  1. drop the holders whose time has passed;
//  2. if the holder is still there, extend its time (a retried call
//     takes no second slot) and say yes;
//  3. else, if fewer than N remain, add it until now + lease and say yes;
//  4. else say no, and how long until the first slot lapses.
//
// Renew (renew.lua) extends a slot still held; a slot whose time passed is
// lost, and not given back, since another holder may have it now. Release
// is a ZREM. The set's key lives until its latest slot lapses, so a
// semaphore nobody holds costs no memory.
//
// # What a crash does
//
// A holder killed with its slot (kill -9, a machine gone, a network cut)
// never releases it; its slot lapses at its time, at most one lease after
// its last renewal, and the next Acquire drops it. Until then the slot is
// counted as held, so a crash costs the others one slot for at most a
// lease, never for ever. Redis failing over may lose the last writes: a
// slot acquired just before is forgotten (one more holder may be let in
// once), as a lock's is (leader/doc.go says why a fence is what guards
// a write, not a lease).
//
// The semaphore of the blog posts is a counter, INCR to take a slot and
// DECR to give it back. The counter is its only record of who holds what,
// so a holder that dies between the two has taken a slot for good: after
// N such deaths nobody is admitted again. naive_test.go kills a holder of
// each (SIGKILL, a process of its own) on a real redis-server and on
// miniredis: the counter reads 1 for ever after, the lease frees its slot.
//
// A holder's time may also be kept elsewhere: the module slots.lua's
// sl_live asks a function for the times of holders whose score is 0.
// The crawler's frontier holds a host's slot by the URL's lease itself
// (frontier/queue/hostslots.lua): the slot lapses with the lease, which the
// worker's heartbeat renews already, so a slot costs no renewal of its
// own, and it is taken in the same call that grants the host's token.
package slots
