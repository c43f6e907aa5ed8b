-- requires: bloom exchange_finish
-- exchange.lua: what a worker process has to say to the frontier of the
-- pages it finished, in one atomic call (the first of an exchange's
-- scripts, sent in one pipeline: back.lua, after it, gives back the
-- leases the process hands back and the unused tokens; handout.lua and
-- take.lua hand out new URLs):
--   1. the links of the pages it finished: marked seen, the new ones queued;
--   2. those pages' leases ended: results recorded, counters bumped;
--   3. records parked in the outbox for links offered to other shards, or
--      acked;
--   4. the tokens of pages that made no request, left in the process's
--      refunds key for back.lua.
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
-- KEYS: the Bloom filter's, then EX_KEYS (contract.lua, generated from
--   frontier/contract.go's exchangeKeyList) by name, K.queues …: each
--   key's content is declared once, in frontier/keyspace/keys.go.
-- ARGV: the Bloom filter's, then one entry ("host\nparent\nelement",
--   queue.lua) per link, then one JSON object read by name, A.expect …,
--   and the texts it names (a field marked "text" holds a string's place,
--   1-based, among those after the object): each field is declared once,
--   in frontier/exchangeargs.go (exchangeArgs), a finished page's numbers
--   there too (doneArgs, read as f[EX_LEASE] … by contract.lua's names).
--   (contract_test.go checks that each field sent is read by one of the
--   exchange's scripts, and each read is sent.)
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
ex_refunds_write(C, refunds)                               -- 4. unused tokens left for back.lua
ex_write_stats(C, stats)                                   --    the counters, once each
ex_drained(C, acked)                                       -- the crawl's end, or the scheduler told
reply[#reply + 1] = cjson.encode({held = table.concat(held)})
return reply
