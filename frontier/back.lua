-- requires: exchange_back
-- back.lua: what a worker process gives back, in one atomic call, in the
-- same pipeline after exchange.lua and finish.lua and before handout.lua
-- (sent when the process gives leases back, or finish.lua may have left
-- refunds):
--   1. a late URL (its token's window closed unused) asks its host for a
--      new token (ex_again), and is kept under its lease with one;
--   2. the other leases given back go to the front of their queues;
--   3. the tokens that made no request go back to their buckets, latest
--      first: those of the leases given back, and those finish.lua left
--      in the process's refunds key for its pages that made none.
--
-- A late URL's new token and its give-back are one script: which one is
-- known only after asking the bucket. It runs only where Redis holds the
-- count of the process's exchanges that exchange.lua left (expect), as
-- handout.lua does. What may run between finish.lua and this call: any
-- other client's calls; the refunds wait in their key, so a grant in
-- between finds those tokens still spent (a host asked less often, never
-- more). What may run between it and the handout: any other client's
-- calls. The handout relies on nothing this call left: it counts as kept
-- the late URLs whose leases are still held when it runs.
--
-- KEYS: EX_KEYS (contract.lua), exchange.lua's after the Bloom filter's,
--   by name (each declared in frontier/keyspace/keys.go).
-- ARGV: one JSON object read by name, then the texts it names:
--   exchangeArgs, declared once in frontier/exchangeargs.go (back,
--   back_grants, back_addrs: the leases given back; back_again: the late
--   ones; the bucket's fields as handout.lua's, so that the token a late
--   URL may get is one a grant would give: none for a stale caller, a
--   paused crawl, or politeness per address).
-- Reply: {0, n} when Redis's count of the process's exchanges is n, not
--   expect (nothing written); or {1}; or, when a late URL was kept, {1,
--   JSON}: againReply, declared once in frontier/reply.go (per late URL
--   kept under a new token, its place in back and its token's slot and
--   window; now_us); or the GONE error, with nothing written, when the
--   crawl is gone.
local K, A, refused = ex_after()      -- keys and arguments, or the refusal (exchange_call.lua)
if refused then return refused end
local C = ex_call(K, A, 1)                        -- the call the steps read: keys, arguments, clock
ex_settings(C)                                    --    and the settings in force
local H, refunds = ex_clock(C), ex_refunds_read(C) -- the tokens' clock; finish.lua's refunds
local kept, again = ex_again(C, H)                -- 1. late URLs ask their hosts again;
ex_give_back(C, kept, refunds)                    -- 2. the others go back,
ex_refund(C, H, refunds)                          -- 3. unused tokens to their buckets
ex_drained(C, 0)                                  -- the crawl's end, or the scheduler told
if #again == 0 then return {1} end
return {1, cjson.encode({again = again, now_us = string.format('%d', C.nowus)})}
