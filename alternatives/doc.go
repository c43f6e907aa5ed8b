// Package alternatives runs the roads RedCrawl did not take beside the
// ones it did, on real Redis, so that the choice can be checked rather
// than taken on trust (docs/alternatives.md gives the figures):
//
//   - four rate limiters beside the crawl's token bucket, fed one request
//     trace: a leaky bucket as a meter and as a queue, a fixed window
//     counter and a sliding-window log (limiters.go);
//   - Redlock over several masters beside one lock with an epoch fence
//     (redlock.go);
//   - the seeds' plain SETBIT Bloom filter beside dedup's blocked one, and
//     the filter's other use, against cache penetration (bloom.go).
//
// Nothing here is in the crawl's path: the crawl imports none of it.
package alternatives
