-- requires: bloom exchange_finish
-- exchange.lua: what a worker process has to say to the frontier of the
-- leases it held, in one atomic call (the first of an exchange's two
-- scripts, sent in one pipeline: handout.lua, after it, hands out new
-- URLs):
--   1. the links of the pages it finished: marked seen, the new ones queued;
--   2. those pages' leases ended: results recorded, counters bumped;
--   3. records parked in the outbox for links offered to other shards, or
--      acked;
--   4. leases it gives back unused (a stopping worker's prefetched URLs;
--      not the late ones, which handout.lua asks their hosts again for),
--      and the tokens that made no request back to their buckets.
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
-- taught it (frontier/doc.go). This call counts the exchange; handout.lua
-- runs only where it finds the count this call left.
--
-- KEYS: the Bloom filter's, then EX_KEYS (contract.lua, from
--   frontier/contract.go):
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
--   ms: frontier/recrawl/recrawl.go), refill (queue.lua), capped (hash: the hosts
--   whose pages reached the cap -> their count, so that a pop reads the
--   cap's state only once some host reached it), deferred (zset
--   "host\nitem-json" -> when it is due again, ms: a retry put back by
--   done's flag 8, released by the sweep), paused (exists while the crawl
--   is paused: hold.lua; the pop hands out nothing), hostrules (hash:
--   host -> its own rate and burst, or block), settings (the settings
--   version in force here: settings.lua)
-- ARGV: the Bloom filter's, then one entry ("host\nparent\nelement", queue.lua)
--   per link, then one JSON object, exchangeArgs (exchangeargs.go), by name,
--   then the texts it names: a field marked "text" holds the place
--   (1-based) of a string among those after the object (they are JSON
--   themselves, and travel unescaped):
--   expect      the process's exchanges Redis should hold
--   count       true: this call counts as one (the batch's last call)
--   results_cap, failed_cap
--   rate, burst  each host's token bucket, for the tokens given back
--               (absent rate: no limit), pause_keep_ms (how long a
--               bucket keeps a pause's count: tokens.lua)
--   factor, max_delay_ms  adaptive politeness: a finished page's fetch
--               time (its ms) times factor, at most max_delay_ms, becomes
--               its host's interval (the bucket's adapt)
--   budget      pages for the whole crawl (0: none; -1: this shard's share,
--               the field 'allow' of its stats): the crawl may be over
--               once it is spent
--   lifo        true: new links go to the front of their hosts' lists
--               (seed --order depth: queue.lua), not the back
--   host_max    pages per host (0: none): new links of a host at it are
--               not queued past twice the cap
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
--   back_addrs  texts: the addresses whose tokens go back too, by place
--               (0: none)
--   (an absent list is empty)
-- Reply: the Bloom reply {BLOOM_OK, count, layers, flag per link} (or a
-- retry status with nothing done, or {BLOOM_REFUSED, count, layers, n}: n
-- is Redis's count of the process's exchanges), then one JSON object:
--   held    a digit a finished lease: 1, it was still held and the page is
--           recorded; 2, this exchange, sent before, recorded it already;
--           0, the lease was lost
-- or the GONE error, with nothing written, when the crawl is gone.
-- The steps (exchange_finish.lua, exchange_back.lua), each taking what it
-- reads and returning what it leaves. bloom_run marks the links seen
-- after ex_guard let the call through (nothing is written before it
-- does), and says where this script's keys and links start.
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
ex_give_back(C, {}, refunds)                               -- 4. leases given back to their queues' fronts,
ex_refund(C, ex_clock(C), refunds)                         --    unused tokens back to their buckets
ex_write_stats(C, stats)                                   --    the counters, once each
ex_drained(C, acked)                                       -- the crawl's end, or the scheduler told
reply[#reply + 1] = cjson.encode({held = table.concat(held)})
return reply
