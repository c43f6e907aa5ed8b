// Package records reads what a crawl found: each shard keeps a stream of
// the records of its pages (keyspace.Keys.Results), capped at its share
// of frontier.ResultsKept, and counts every record it adds (its stats
// field "records"), so that what the count exceeds the records read is
// what trimming dropped before anyone read it. The exchange (exchange.lua)
// and the sweep write the streams; this package reads them: in order with
// a Cursor (crawler export), or through consumer groups that each get
// every record once and acknowledge it (crawler export --group), whose
// state (GroupState) says how far behind each is. A record is opaque
// bytes here (frontier.Outcome.Record).
package records
