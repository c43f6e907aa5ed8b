// Package dedup is a scalable Bloom filter kept in Redis bitmaps: the
// crawler's memory of every URL any worker has seen, at about 1.25 bytes per
// URL for a 1 % false-positive rate.
//
// # The filter
//
// A Bloom filter of m bits and k hash functions holding n items answers
// "present" for an item never added with probability p ≈ (1 − e^(−kn/m))^k.
// For a planned n and p, the best choice is m = −n·ln p / ln²2 bits and
// k = round(m/n · ln 2); at p = 1 % that is 9.6 bits (1.2 bytes) and k = 7.
// This filter is blocked (below), which needs a few percent more: 10 bits
// and k = 6 at 1 %, 15.6 bits and k = 9 at 0.1 % (layerAt computes it).
// It never answers "absent" for an item that was added: no false negatives.
// For a crawler a false positive means a URL silently skipped, so the rate
// is kept honest (Stats.EstimatedFPRate) and the filter grows rather than
// saturates.
//
// # Growth (Almeida et al., "Scalable Bloom Filters")
//
// Layer 0 is sized for Params.Capacity at Params.FPRate. When it holds
// Capacity items, layer 1 starts, Growth times larger and Tightening times
// stricter; and so on. An item is present when any layer has it, so the
// overall rate is bounded by Σ p_l ≤ p·(1 + r/(1−r)). New items always go
// to the last layer; older layers are full and never written again.
//
// # Layout in Redis
//
//	<key>                      hash: n, p, growth, tightening (written once),
//	                           layers, count, allocated (layers whose segments exist)
//	<key>:<layer>:<segment>    string bitmap, one segment of a layer
//
// A layer is split into about 64 segments of 2^j − 16 bytes each: a size that
// fills one allocator size class exactly (so MEMORY USAGE matches the plan),
// keeps every bit offset below 2^32 (Redis's limit for one string), and lets a
// layer of any size live in as many strings as it needs. Segments are
// allocated whole before their first bit is written (alloc.lua; the script
// refuses to write into a layer not yet allocated), never grown bit by bit,
// which can double their memory. Give
// the key a hash tag ("crawl:{name}:seen") and every segment shares its slot.
//
// # Atomicity
//
// AddNew is test-and-set in one Lua script call per batch (bloom.lua): the
// script tests the full layers, then sets the item's bits in the last layer
// and learns from the old bit values whether it was new. Two workers adding
// the same URL at the same instant cannot both be told "new"; check-then-add
// as two calls (exists, then add) would tell both.
//
// The filter is blocked (Putze, Sanders and Singler, 2007): an item's k
// bits lie in one 512-bit block of one segment, so the script reads them
// with one GETRANGE and writes them with one SETRANGE. For Redis this is
// about three times cheaper per item than k bit offsets through BITFIELD:
// inside a script every string made (an offset, an argument) costs ~0.4 µs,
// more than the bit work. The price is a few percent of memory, which
// layerAt pays so that the false-positive rate stays as planned.
//
// Other packages run the same test-and-set in their own scripts: a script
// that requires the module bloom (Lua) runs through Filter.Exec, which is
// how frontier/ marks a URL seen and queues it in one
// step, so a URL is never marked seen without being queued.
//
// # Agreement
//
// Every worker must hash into the same m and k. Open writes the parameters
// once and refuses (ErrMismatch) a worker built with different ones;
// Attach adopts what Redis holds. A client caches only the layer count, and
// the script refuses a stale one (the client recomputes and retries).
package dedup
