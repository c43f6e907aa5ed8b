// Package frontier is a crawl's reliable queue in Redis: no URL is lost,
// however a worker dies.
//
// # The crawl's keys: the storage contract
//
// Every key of a crawl is built here, and nothing outside this package
// reads one: package crawl, status, export and the command line use the
// methods (Stats, Records.Read, Done, Delete …). A Frontier is the queue
// (Enqueue, Exchange, Schedule: the URLs, their leases and their hosts'
// buckets); beside it, on the same shards, each concern is a type of its
// own, reached as a field: Records (the results streams), Registry (the
// workers, their heartbeats and lease renewals), Events (the event log),
// Digests (the payload digest index) and Visits (the recrawl schedule). A crawl named NAME (CheckName)
// is split over Options.Shards shards; shard 0's keys are under the hash tag
// crawl:{NAME}, shard s's under crawl:{NAME/s}, so a Redis Cluster may put
// each shard on any master, while one script always sees one shard's keys.
// A host lives in one shard (ShardOf) with all of its keys. Each shard has:
//
//	queue:<host>  list: the host's FIFO queue, in compact elements that store
//	           the host, the scheme and a page's URL (as its links' parent)
//	           once (queue.lua); about 45 bytes a queued URL of 60 characters
//	lengths    hash host -> URLs in its queue
//	ready      sorted set: the hosts with URLs queued -> their token bucket,
//	           kept as its tat (ms: politeness/tokens.lua), the time it is
//	           full again; with a burst of 1, when its next URL may be popped
//	refill     sorted set: hosts whose queue ran dry while their bucket still
//	           filled -> its tat, until a URL queued for them brings them
//	           back to ready with it (a host in neither has a full bucket)
//	leases     zset "lease-id\nhost\nitem-json" -> lease expiry (ms, Redis TIME),
//	           for every item a worker holds: a lease carries its item, so one
//	           structure says what is held, by which lease, until when
//	deferred   zset item -> time it may be fetched again (ms, Redis TIME)
//	failed     list of items that failed for good, with the reason (capped)
//	stats      hash of counters (enqueued, pages, the outcome words …, Stats)
//	           and four fields that count nothing: 'queued', the URLs in
//	           the queues; 'allow', the shard's share of a page budget;
//	           'end_scan', how far a budgeted crawl's end has looked;
//	           and 'recrawl_at', when the last recrawl was asked for
//	results    stream of result records (opaque to frontier, records.Stored),
//	           capped at the shard's share of ResultsKept
//	hostpages  hash host -> pages fetched (Options.HostPageCap)
//	capped     hash: the hosts whose pages reached the cap -> their count
//	           (read by pops only while it exists)
//	seen       the shard's Bloom filter (package dedup), segments under seen:
//	rate:<host>    hash: what else a host's bucket holds: a pause
//	           (paused_until µs, pauses, why: politeness's pause.lua), and
//	           the frontier's own fields beside it: delay, the host's least
//	           interval, ms (robots.txt's Crawl-delay, hostdelay.lua); first,
//	           the pop whose URL went as the host's first request when that
//	           delay was learnt; adapt, its interval by adaptive politeness,
//	           ms (exchange_finish.lua's ex_adapt) (RateKey)
//	slowed     hash: the hosts whose rate:<host> holds any of those, the only
//	           ones whose hash a pop reads
//	robots:<scheme>://<host>  the origin's robots.txt cache (politeness.Robots, RobotsKey)
//	near:<host>:bands, :pages, :order  with --near-duplicates, the host's
//	           near-duplicate index (frontier/nearpages, neardup/index.lua)
//	near pages the pages the shard's hosts' near-duplicate indexes hold
//	           (at most its share of nearpages.CrawlCap)
//	counter:<process>  string: the exchanges Redis holds of one worker
//	           process (expires a day after its last exchange)
//	ended:<process>  string: the lease ids the process's last exchange to
//	           end leases ended (kept a day): the same exchange sent again
//	           after its reply was lost finds its pages recorded, and
//	           records them once
//	fresh:<process>  hash: lease id -> how many of its page's links
//	           exchange.lua found new, for the record finish.lua writes
//	           (set only above 0; deleted as the lease ends;
//	           kept a day after the last)
//	grants:<process>  string: the hosts, and how many URLs each, that the
//	           process's last handout granted tokens for, under its
//	           exchange's count, for the take in the same pipeline to
//	           take (read and deleted there; expires with a lease's time)
//	done       "1" once the crawl is over (shard 0's is the crawl's: set
//	           after every other shard's last record, Done)
//	queue:wake pub/sub channel (not a key): "1" when the empty queue gets
//	           URLs, "drained" when nothing is queued or leased, "done"
//	outbox     with several shards: exchange id -> the records of pages whose
//	           links to other shards' hosts wait for their offers' ack,
//	           with those links (outbox.go)
//	due        zset "host\nelement\nvisit" -> when due (ms): each fetched URL
//	           and what its last fetch left for the next one (Visit), for
//	           recrawls and continuous crawls; about 280 bytes a URL (frontier/recrawl)
//	queue: dns, queue: addr, queue: addr busy, queue: addr hosts  with
//	           Policy.PerAddress (addrs.lua): host -> "address expiry-ms"
//	           (SetAddresses); address -> its bucket's tat; address -> the
//	           tokens it gave; address -> "n host …" (BusiestAddresses)
//	queue: slots HOST, queue: slots@ADDR, queue: full, queue: full@ADDR
//	           with Policy.HostConcurrency (hostslots.lua): a host's (an
//	           address's) semaphore of requests in flight, lease member ->
//	           0 (held while the lease is) or a grant's reservation -> its
//	           lapse (ms); the hosts parked at their cap -> "tat parked";
//	           the hosts parked for an address's sake
//
// Shard 0 also holds what the crawl has once:
//
//	config     hash: the crawl's settings (StoreConfig; package crawl gives
//	           the fields their meaning). The crawl exists while it does:
//	           every script that writes refuses without it (ErrGone)
//	hosts      set: the seeds' hosts, the crawl's scope (AddSeedHosts)
//	workers    zset worker -> alive until (ms: one lease past its last
//	           heartbeat); Register adds an id only when no live worker
//	           holds it (register.lua), Heartbeat extends it, Deregister ends it
//	leader     the scheduler's lock, and leader:epoch its fencing counter
//	           (package leader, LeaderKey)
//	login      hash url, form, logged_out: the crawl's login (seed
//	           --login-url; the form a secret: package session)
//	session    hash gen, state, why, cookies, used, strikes: the session
//	           every worker's requests to the login's site go with;
//	           session:lock (and :epoch) the lock one worker logs in
//	           under; channel session:renewed announces a new one
//	events     stream: the event log, a sentence an event (package frontier/events)
//	digests    hash payload digest -> "uri\tdate": the response archived
//	           whole with that payload, at most payloads.IndexCap (frontier/payloads)
//	digests:committed  the same, copied when the crawl last completed,
//	           and '#' when: what later crawls' --dedup-from refer to
//
// and shard s > 0 its marker, exists (the crawl exists in that shard while
// it does), and fence, the highest epoch of a scheduler that swept it.
// Delete removes every key by the patterns crawl:{NAME}:* and
// crawl:{NAME/*, which match no other crawl's.
//
// # Protocol
//
// Enqueue is dedup's Bloom test-and-set and the queueing of the new URLs in one
// script (enqueue.lua appended to dedup's bloom.lua): a URL is never marked
// seen without being queued, so a crash between the two cannot lose it.
//
// Exchange is how a worker process talks to the frontier, and the one way
// its leases end (the sweep ends those that expired): with a page's
// outcome, given back unused, or put back with no page (Outcome.PutBack: a
// retry deferred, a busy host's URL requeued): one pipeline of up to five
// atomic scripts, exchange.lua, which takes many pages' links
// (deduplicated and queued), then finish.lua, which ends their leases
// (results recorded, leases ended), then back.lua
// (with leases given back, to the front of their queues, late URLs asking
// their hosts again first, and unused tokens refunded), then handout.lua, which grants up to W new URLs
// (hosts due and their tokens) where it finds the exchange exchange.lua
// counted, then take.lua, which takes the URLs granted off their queues
// under new leases.
// A lease ends only after its page's links are queued (finish.lua runs
// after exchange.lua, and only where exchange.lua counted the exchange),
// so a crash between the two cannot lose them: the lease expires, and its
// URL is fetched again. A pop grants a host that is due
// (its bucket has a token, or will within PopAhead) as many URLs as it has
// tokens for and its queue holds, each with a token of the host's bucket
// (HostRate, HostBurst; politeness's tokens.lua), and moves the host's
// score on by the tokens taken (handout.lua); the take in the same
// pipeline moves the first URLs of each host granted into leases
// (take.lua): the item is never only in a worker's memory, and a host
// whose bucket is empty is simply not offered, instead of its URLs being
// popped and pushed back again and again. The bucket is the score: a token bucket is fully
// described by one number, its theoretical arrival time (GCRA, the
// virtual-scheduling form of the same bucket), which is the time ready
// had to hold anyway, so taking a token costs a polite pop no call of its
// own. A host's pause, its own Crawl-delay (Hosts.SetDelay) and its adaptive
// interval live in its rate:<host> hash, which the pop reads for the hosts
// marked in slowed only. A URL whose token's window closed before its
// request could go is given back late (Lease.Late) and asked again first
// in the same exchange (back.lua, exchange_back.lua's ex_again): the
// pop's own functions and horizon, its old token refunded while it is the host's
// last, its lease kept (Exchanged.Again) and counted among the URLs
// wanted. A Requeue put-back returns a URL to the front of
// its host's queue (its robots.txt is unavailable, say), and pushes the
// host's due time to then, before the same exchange's grant.
// With a page
// budget, a pop hands out no more URLs than pages fetched plus leases
// leave room for: the budget holds exactly for the whole crawl.
//
// Batching is the point: a lone call costs a lightly loaded Redis more
// than a page's work, so a worker's exchanger (crawl/exchanger.go) sends
// its pages dozens to a call (bench/README.md has the numbers).
//
// A live worker's heartbeat (Heartbeat, every few seconds) extends its
// leases; a worker that is killed stops extending them, and within one
// lease length (10 s by default) the scheduler's sweep puts its items back
// on the queue with attempts+1, or on the failed list at the maximum. A
// late outcome for a reclaimed lease queues its links but records nothing;
// at worst the page is fetched twice.
//
// A Retry put-back hands an item back to be fetched after a delay (a
// retry, or the server said Retry-After), its attempts counted: never
// dropped, never spun on.
//
// # Redis going back in time
//
// Redis can lose acknowledged writes: a restart from an RDB snapshot older
// than the crash, a failover to a replica that had not caught up, an AOF
// fsynced once a second. The queue itself recovers (what the snapshot held
// in flight expires and is queued again), but a worker also remembers what
// its exchanges told it — links known to be seen, which it no longer sends
// — and those memories may now describe writes that are gone. So each
// exchange carries the number of exchanges this process has made, and the
// script compares it, before any write, with the count Redis keeps for the
// process (counter:<process>, bumped by each exchange). If they
// differ, the call is refused (ErrRolledBack) with Redis's count, which the
// process adopts; the worker forgets what it knew and sends the exchange
// again. A lost reply to an exchange that did apply looks the same and
// costs the same: one forgotten cache. The count is per process, so no
// other worker's progress can hide the loss of this one's writes.
//
// # Shards
//
// A crawl of one shard is a Frontier with Options.Shards 1, not another
// type; with several, what crosses shards (links to other shards' hosts,
// pops, completion, the page budget's shares, fencing) is in shards.go,
// pipeline.go (an exchange over shards: one pipeline), outbox.go (what
// keeps a page's links to other shards safe between its calls),
// shardsweep.go and docs/design.md.
//
// # The scheduler's sweep
//
// Schedule runs only in the elected leader and is a fence.Script:
// a sweep by a leader whose epoch is no longer the newest is refused whole.
// It moves due deferred items to the front of their host's queue and expired
// leases back there too (or to failed), and sets the done flag once nothing
// is queued, leased or deferred (or the budget is spent and nothing is
// leased). It reports when the next deferred item is due, so the leader
// sweeps then rather than often. All times are Redis TIME.
package frontier
