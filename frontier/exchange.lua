-- requires: bloom exchange_links
-- exchange.lua: the links a worker process's finished pages found, in one
-- atomic call, the first of an exchange's scripts, sent in one pipeline
-- (finish.lua, after it, ends those pages' leases and records them;
-- back.lua gives back the leases handed back and the unused tokens;
-- handout.lua and take.lua hand out new URLs):
--   1. the links marked seen (the Bloom filter), the new ones queued;
--   2. per finished page, how many of its links were new, left in the
--      process's fresh hash for its record (finish.lua);
--   3. the outbox entries whose links' offers went through acked: their
--      records added to the results stream.
-- The links are queued before their pages' leases end (finish.lua), so a
-- crash between the two loses none: the leases expire, their URLs are
-- fetched again, and their links are found seen. It also serves alone to
-- offer links (another shard's pages', the scheduler's redelivery of an
-- outbox entry, links beyond one Bloom batch).
--
-- Before any write, a guard refuses the call when the crawl is gone (its
-- config deleted by a reset, or the crawl under its name another instance
-- than the caller's: base.lua's fr_ours) or when Redis went back in time: each worker
-- process counts its exchanges and so does Redis, in the process's own
-- key; a call that finds Redis's count unequal to the process's is refused
-- with Redis's count, and the process forgets what its lost exchanges
-- taught it (frontier/doc.go). This call counts the exchange; the scripts
-- after it run only where they find the count this call left.
--
-- KEYS: the Bloom filter's, then EX_KEYS (contract.lua, generated from
--   frontier/contract.go's exchangeKeyList) by name, K.queues …: each
--   key's content is declared once, in frontier/keyspace/keys.go.
-- ARGV: the Bloom filter's, then one entry ("host\nparent\nelement",
--   queue.lua) per link, then one JSON object read by name, A.expect …,
--   and the texts it names (a field marked "text" holds a string's place,
--   1-based, among those after the object): each field is declared once,
--   in frontier/exchangeargs.go (exchangeArgs). (contract_test.go checks
--   that each field sent is read by one of the exchange's scripts, and
--   each read is sent.)
-- Reply: the Bloom reply {BLOOM_OK, count, layers, flag per link} (or a
-- retry status with nothing done, or {BLOOM_REFUSED, count, layers, n}: n
-- is Redis's count of the process's exchanges), or the GONE error, with
-- nothing written, when the crawl is gone.
-- The steps (exchange_links.lua), each taking what it reads and
-- returning what it leaves. bloom_run marks the links seen after ex_guard
-- let the call through (nothing is written before it does), and says
-- where this script's keys and links start.
local reply, key0, link0, links = bloom_run(1, 1, ex_guard)
if reply[1] == BLOOM_REFUSED and reply[4] == 'gone' then
  return redis.error_reply(FR_GONE)
end
if reply[1] == BLOOM_REFUSED and type(reply[4]) == 'string' then
  return redis.error_reply(reply[4]) -- CORRUPT, NOPERM: nothing written
end
if reply[1] ~= BLOOM_OK then return reply end
local C = ex_begin(reply)      -- counted; the call the steps read: keys, arguments, clock
local stats = {}               -- counters to bump
ex_queue_links(C, stats)       -- 1. the new links queued
ex_fresh_write(C)              -- 2. each page's new links, for its record
local acked = ex_acks(C, stats) -- 3. outbox entries whose offers went through
ex_write_stats(C, stats)       --    the counters, once each
ex_drained(C, acked)           -- the crawl's end, or the scheduler told
return reply
