-- requires: bloom exchange_finish exchange_back exchange_pop exchange_end
-- exchange.lua: all a worker process has to say to the frontier, in one
-- atomic call:
--   1. the links of the pages it finished: marked seen, the new ones queued;
--   2. those pages' leases ended: results recorded, counters bumped;
--   3. leases it gives back unused (a stopping worker's prefetched URLs),
--      a late one first asking its host for a new token;
--   4. up to W new URLs popped under fresh leases, each with a token of its
--      host's bucket.
-- Links are queued in the same step as their page's lease ends, so a crash
-- can never lose them. A lost lease (expired and reclaimed: the URL is
-- queued again and will produce its own result) records and counts nothing.
--
-- Before any write, a guard refuses the call when the crawl is gone (its
-- config deleted by a reset, or the crawl under its name another instance
-- than the caller's: base.lua's fr_ours) or when Redis went back in time: each worker
-- process counts its exchanges and so does Redis, in the process's own
-- key; a call that finds Redis's count unequal to the process's is refused
-- with Redis's count, and the process forgets what its lost exchanges
-- taught it (frontier/doc.go).
--
-- KEYS: the Bloom filter's, then
--   queues (the prefix of the hosts' queues, queue.lua), ready (zset host ->
--   its bucket's tat, ms: tokens.lua), leases (zset
--   "id\nhost\nitem-json" -> expiry ms), stats,
--   failed, results, done flag, the process's exchange counter, the config,
--   hostpages (hash host -> pages fetched, kept with a per-host cap),
--   lengths (hash host -> URLs queued, queue.lua),
--   ended (the lease ids this process's last exchange to end leases
--   ended, space-separated, kept a day),
--   buckets (the prefix of the hosts' bucket hashes: buckets .. host:
--   pauses, Crawl-delays, adaptive intervals; tokens.lua),
--   slowed (hash: the hosts whose bucket hashes hold something to read),
--   outbox (hash id -> "ms\npages-json\nlinks-json": the records of pages
--   whose links to other shards' hosts went in calls of their own, kept
--   until those calls are known to have gone through; see "outbox" below),
--   due (zset "host\nelement\nvisit" -> when the URL's revisit is due,
--   ms: frontier/visit.go), refill (queue.lua), capped (hash: the hosts
--   whose pages reached the cap -> their count, so that a pop reads the
--   cap's state only once some host reached it), deferred (zset
--   "host\nitem-json" -> when it is due again, ms: a retry put back by
--   done's flag 8, released by the sweep), paused (exists while the crawl
--   is paused: hold.lua; the pop hands out nothing), hostrules (hash:
--   host -> its own rate and burst, or block), settings (the settings
--   version in force here: settings.lua)
-- ARGV: the Bloom filter's, then one entry ("host\nparent\nelement", queue.lua)
--   per link, then one JSON object, exchangeArgs (exchange.go), by name,
--   then the texts it names: a field marked "text" holds the place
--   (1-based) of a string among those after the object (they are JSON
--   themselves, and travel unescaped):
--   expect      the process's exchanges Redis should hold
--   count       true: this call counts as one (the batch's last call)
--   want        URLs wanted
--   results_cap, failed_cap, lease_ms
--   rate, burst  each host's token bucket (absent rate: no limit, but a
--               host's pause and own delay still hold), pause_keep_ms
--               (how long a bucket keeps a pause's count: tokens.lua)
--   factor, max_delay_ms  adaptive politeness: a finished page's fetch
--               time (its ms) times factor, at most max_delay_ms, becomes
--               its host's interval (the bucket's adapt)
--   ahead_ms    the horizon: a host whose next token's window opens
--               within it is popped, its token reserved, and its URL
--               fetched in that window (tokens.lua's tb_window)
--   least_ms    the least window a token is good for (tb_window)
--   budget      pages for the whole crawl (0: none; -1: this shard's share,
--               the field 'allow' of its stats; pops stop where pages
--               fetched + URLs in flight reach it, and pages are reported)
--   settings    the settings version the caller's rate, burst, budget and
--               caps come from (0: as seeded): older than the shard's,
--               the call pops nothing and gives late URLs back (wait 0:
--               the caller reads the new settings and asks again)
--   lifo        true: new links go to the front of their hosts' lists
--               (seed --order depth: queue.lua), not the back
--   host_max    pages per host (0: none): a host that reached it has its
--               queued URLs dropped when it comes up for a pop, and counted
--               in stats as skipped_links:max_pages_per_host
--   done        the finished leases, each an array of numbers by place
--               (doneArgs, exchange.go), absent trailing ones 0; a "text"
--               is the place of a string among those after the object, 0
--               for none:
--                 1 lease    text: its member
--                 2 stat     text: the stats fields to bump, comma-separated
--                 3 record   text: its record
--                 4 links    its links in this call, which follow the
--                            previous page's
--                 5 visit    text: the due set's member its fetch leaves
--                            for the next one (the sweep took the one it
--                            was fetched with out), due in
--                 6 due      ms from now
--                 7 flags    1: a page was fetched; 2: no request went to
--                            its host, whose token goes back; 4: it has
--                            links to other shards' hosts, offered there
--                            in the same pipeline, and its record waits in
--                            this call's outbox entry until those offers
--                            are acked; 8: no page, its URL deferred until
--                            after (a retry); 16: no page, its URL back at
--                            the front of its host's queue, the host not
--                            offered again for after (a busy host)
--                 8 failed   text: its failed-list entry
--                 9 ms       its fetch's time (with a factor)
--                10 counted  its new links that earlier calls of the
--                            batch counted
--                11 grant    with flags 2: its token's slot (µs,
--                            Redis's clock: the pop's now_us plus its
--                            slot); 0, unknown: the token stays taken
--                12 put      with flags 8 or 16: text, the entry that
--                            goes back ("host\nitem-json": a retry's
--                            attempts and errors); 0, the lease's own
--                13 after    with flags 8 or 16: ms from now
--   outbox_id   this call's outbox entry, written when a page with away
--               links is recorded; outbox (text: those links, JSON, for
--               the scheduler to offer again should no ack come)
--   acks        outbox entries whose offers went through, each {id, extra
--               (per page of that call, by its place: the new links the
--               offers found)}: their records are added to the results
--               stream, their new_links counting the offers' too, and the
--               entries deleted; an entry gone already (acked by the
--               scheduler) is skipped
--   back        texts: the members of the leases given back
--   back_grants the slots of their tokens, by place (µs, Redis's clock;
--               0: unknown, the token stays taken), as done's grant
--   back_again  the places (1-based) in back of late URLs: their tokens'
--               windows closed before their requests could go; each asks
--               its host for a new token first (ex_again); each kept is
--               one of the URLs wanted
--   ids         text: the first of want lease ids, one for each URL that
--               may be popped, the others in the texts after it
--   (an absent list is empty)
-- Reply: the Bloom reply {BLOOM_OK, count, layers, flag per link} (or a
-- retry status with nothing done, or {BLOOM_REFUSED, count, layers, n}: n
-- is Redis's count of the process's exchanges), then one JSON object:
--   held    a digit a finished lease: 1, it was still held and the page is
--           recorded; 2, this exchange, sent before, recorded it already;
--           0, the lease was lost
--   pages   pages fetched (with a budget), done (1: the crawl is over),
--   wait    ms until some host is due within the window when fewer than
--           want were popped (-1: nothing queued, or the crawl paused)
--   paused  1 while the crawl is paused (absent otherwise): nothing popped
--   settings  the settings version in force in the shard (absent: 0)
--   now_us  Redis's time of the pop (µs, a string; absent when nothing
--           was popped or kept), from which the lists below count
--   again   per late URL given back that its host gave a new token, its
--           lease kept: {place in back, slot, from, until}, as below
--   slot    per popped URL, in order, µs from now_us to its token's slot
--           (absent: no URL popped has a token, the host having no limit)
--   from, until  per popped URL, µs from now_us to when its token's
--           window opens and closes (tb_window): its request may go from
--           from until before until (until -1: no token, no end)
--   delays  host -> ms: the popped hosts whose own delay the pop kept to
--   fresh   host -> tat: the popped hosts without a delay whose bucket
--           was full (held no grant) before this pop, each with the tat the
--           pop left (ms, a string): hostdelay.lua lets such a URL go when
--           its host's delay is learnt, if no grant came since
-- and then popped: host, item-json, host, item-json …, the i-th under
-- the i-th lease id (left out of the object: the items are JSON already)
-- or the GONE error, with nothing written, when the crawl is gone.
-- The exchange, step by step (exchange_guard.lua, exchange_finish.lua,
-- exchange_back.lua, exchange_pop.lua, exchange_end.lua). bloom_run marks the
-- links seen after ex_guard let the call through (nothing is written
-- before it does), and says where this script's keys and links start.
local reply, key0, link0, links = bloom_run(1, 1, ex_guard)
if reply[1] == BLOOM_REFUSED and reply[4] == 'gone' then
  return redis.error_reply(FR_GONE)
end
if reply[1] == BLOOM_REFUSED and type(reply[4]) == 'string' then
  return redis.error_reply(reply[4]) -- CORRUPT, NOPERM: nothing written
end
if reply[1] ~= BLOOM_OK then return reply end
local C = ex_begin(reply)      -- counted; the call the steps read: keys, arguments, clock
local stats, refunds = {}, ex_refunds() -- counters to bump, tokens to give back
ex_queue_links(C, stats)                                   -- 1. the new links queued
local held, parked = ex_finish_pages(C, stats, refunds)    -- 2. finished leases ended, their pages recorded
local acked = ex_outbox(C, parked, stats)                  -- 3. records parked for away links, or acked
local H = ex_clock(C)                                      --    the call's token clock
local kept, again = ex_again(C, H)                         -- 4. late URLs given back ask their hosts again
ex_give_back(C, kept, refunds)                             -- 5. leases given back to their queues' fronts
ex_refund(C, H, refunds)                                   -- 6. unused tokens back to their buckets
ex_write_stats(C, stats)                                   -- 7. the counters, once each
local B = ex_budget(C, #again)                             -- 8. how many URLs a page budget leaves room for
local P = ex_pop(C, H, B)                                  -- 9. URLs popped, each with its host's token
local done = ex_drained(C, B, P, acked)                    -- 10. the crawl's end, or the scheduler told
return ex_reply(C, held, again, B, P, done)                -- 11.
