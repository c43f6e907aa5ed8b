-- requires: exchange_back
-- again.lua: the late URLs a worker process gives back, in one atomic
-- call, in the same pipeline after exchange.lua and before handout.lua
-- (sent only when the process has late URLs): each asks its host for a new
-- token (ex_again), is kept under its lease with one, else goes back to
-- the front of its queue; the tokens of those given back go back to their
-- buckets (ex_refund, latest first).
--
-- A late URL's new token and its give-back are one script: which one is
-- known only after asking the bucket. It runs only where Redis holds the
-- count of the process's exchanges that exchange.lua left (expect), as
-- handout.lua does. What may run between it and the handout: any other
-- client's calls. The handout relies on nothing this call left: it counts
-- as kept the late URLs whose leases are still held when it runs.
--
-- KEYS: EX_KEYS (contract.lua), as exchange.lua's after the Bloom
--   filter's (it reads queues, ready, leases, stats, counter, config,
--   lengths, buckets, slowed, refill, paused, hostrules, settings).
-- ARGV: one JSON object, exchangeArgs (exchangeargs.go), by name, then the
--   texts it names:
--   expect      the process's exchanges Redis should hold: exchange.lua's
--               count, after it
--   instance    the crawl's instance the caller read (fr_ours)
--   rate, burst, ahead_ms, least_ms, settings, lane, lifo, ip  as
--               handout.lua's: the token a late URL may have is one a
--               grant would give (a stale caller, a paused crawl, or
--               politeness per address: none)
--   back        texts: the late URLs' lease members
--   back_grants their tokens' slots, by place (µs, Redis's clock; 0:
--               unknown, the token stays taken)
--   back_again  the places in back (1-based) that ask again: every one
--   back_addrs  texts: the addresses whose tokens go back too (0: none)
-- Reply: {0, n} when Redis's count of the process's exchanges is n, not
-- expect (nothing written); or 1, then, when a late URL was kept, one JSON
-- object:
--   again   per late URL its host gave a new token, its lease kept:
--           {place in back, slot, from, until}: µs from now_us to its
--           token's slot and to when its window opens and closes (until
--           -1: no token, no end), as handout.lua's
--   now_us  Redis's time of the call (µs, a string)
-- or the GONE error, with nothing written, when the crawl is gone.
local K, A, refused = ex_after()      -- keys and arguments, or the refusal (exchange_call.lua)
if refused then return refused end
local C = ex_call(K, A, 1)                   -- the call the steps read: keys, arguments, clock
ex_settings(C)                               --    and the settings in force
local H, refunds = ex_clock(C), ex_refunds() -- the tokens' clock; tokens to give back
local kept, again = ex_again(C, H)           -- late URLs ask their hosts again;
ex_give_back(C, kept, refunds)               -- those with no new token go back,
ex_refund(C, H, refunds)                     -- their tokens to their buckets
if #again == 0 then return {1} end
return {1, cjson.encode({again = again, now_us = string.format('%d', C.nowus)})}
