-- requires: exchange_finish
-- finish.lua: a worker process's finished pages, in one atomic call, in
-- the same pipeline after exchange.lua (which queued their links) and
-- before back.lua, handout.lua and take.lua:
--   1. their leases ended: a page whose lease is still held recorded (its
--      new links as exchange.lua counted them), its URL's next visit, its
--      retry or its failure noted, counters bumped; a lost lease (expired
--      and reclaimed: the URL is queued again and will have its own
--      record) records and counts nothing;
--   2. the records of pages with links to other shards parked in the
--      outbox until those links' offers are acked (exchange.lua's next);
--   3. the tokens of pages that made no request left in the process's
--      refunds key for back.lua.
--
-- It runs only where Redis holds the count of the process's exchanges that
-- exchange.lua left (expect), as back.lua and handout.lua do. What may run
-- between exchange.lua and this call: any other client's calls. The
-- links are queued already, so a pipeline cut between the two (this call
-- never came) loses none: the leases expire and their URLs are fetched
-- again. The new links' counts wait in the process's fresh hash by
-- lease, set only above 0: the exchange sent again (its reply lost) finds
-- its links seen (the filter's bits are only ever set), sets no count,
-- and the records count what the first run found.
--
-- KEYS: EX_KEYS (contract.lua), exchange.lua's after the Bloom filter's,
--   by name (each declared in frontier/keyspace/keys.go).
-- ARGV: one JSON object read by name, then the texts it names:
--   exchangeArgs, declared once in frontier/exchangeargs.go (done: each
--   finished page's numbers, doneArgs, read as f[EX_LEASE] … by
--   contract.lua's names).
-- Reply: {0, n} when Redis's count of the process's exchanges is n, not
--   expect (nothing written); or {1, JSON}: endReply, declared once in
--   frontier/reply.go (held: a digit a finished lease, 1 still held and
--   recorded, 2 recorded by this exchange sent before, 0 lost); or the
--   GONE error, with nothing written, when the crawl is gone.
local K, A, refused = ex_after()      -- keys and arguments, or the refusal (exchange_call.lua)
if refused then return refused end
local C = ex_call(K, A, 1)                           -- the call the steps read: keys, arguments, clock
local stats, refunds = {}, ex_refunds()              -- counters to bump, tokens to give back
local held, parked = ex_finish_pages(C, stats, refunds) -- 1. finished leases ended, their pages recorded
ex_park(C, parked)                                   -- 2. records parked for away links
ex_refunds_write(C, refunds)                         -- 3. unused tokens left for back.lua
ex_write_stats(C, stats)                             --    the counters, once each
ex_drained(C, 0)                                     -- the crawl's end, or the scheduler told
return {1, cjson.encode({held = table.concat(held)})}
