// Package status reads a crawl as `crawler status` and the dashboard show
// it: Read gathers it from Redis (the frontier's sizes and counters, the
// Bloom filter, the leader and epoch, the workers and their last
// heartbeats, paused hosts, the busiest queues and addresses, rendering,
// the revisit schedule, export groups, the event log) without taking part
// in the crawl, and Status.String says it for a person. It reads; it
// changes nothing (the crawl's controls are crawl/admin's: SetSettings,
// ChangeHost, Reset).
package status
