-- requires: exchange_end
-- handout.lua: the frontier grants a worker process new URLs, in one
-- atomic call, in the same pipeline after exchange.lua and finish.lua
-- (which ended the process's leases) and back.lua (what it gives back, when it does), and
-- before take.lua (which takes the URLs granted off their queues and
-- leases them):
--   1. how many URLs a page budget leaves room for, the late URLs
--      back.lua kept counted among those wanted;
--   2. up to want URLs granted, each with a token of its host's bucket
--      (and of its address's, with politeness per address): the hosts,
--      and how many URLs each, left in the process's grants key for
--      take.lua (exchange_pop.lua).
--
-- It runs only where Redis holds the count of the process's exchanges that
-- exchange.lua left (expect), which a crawl gone (reset, or seeded anew
-- under its name) has not: a refused exchange.lua (the crawl's Redis
-- lost writes, a reply was lost), or one that has to run again (its Bloom
-- filter grew), leaves the count as it was, and this call writes nothing
-- and replies {0, Redis's count}: the process sends it again once
-- exchange.lua went through, or forgets as exchange.lua's refusal says.
-- What may run between the two: any other client's calls, the sweep
-- included. The handout relies on nothing exchange.lua left but the
-- count: the budget counts the pages recorded and the leases held when it
-- runs, and the late URLs kept are those whose leases are still held.
--
-- KEYS: EX_KEYS (contract.lua), exchange.lua's after the Bloom filter's,
--   by name (K.ready …; each declared in frontier/keyspace/keys.go).
-- ARGV: one JSON object read by name (A.want …), then the texts it names:
--   exchangeArgs, declared once in frontier/exchangeargs.go. What the
--   grant makes of them: want counts the late URLs kept (kept: those whose
--   leases are still held); a host whose next token's window opens within
--   ahead_ms is granted, its token reserved; grants stop where pages
--   fetched plus URLs in flight reach budget; a settings version older
--   than the shard's grants nothing (wait 0: the caller reads the new
--   settings and asks again); a host at host_max has its queue dropped by
--   take.lua when it comes up.
-- Reply: {0, n} when Redis's count of the process's exchanges is n, not
--   expect (nothing written); or {1, JSON}: exchangeReply, declared once in
--   frontier/reply.go (pages, done, wait, paused, settings, now_us, hosts
--   and counts, each URL's slot, from and until, delays, rates, fresh,
--   resolve, addrs); or the GONE error, with nothing written, when the
--   crawl is gone.
local K, A, refused = ex_after()      -- keys and arguments, or the refusal (exchange_call.lua)
if refused then return refused end
local C = ex_call(K, A, 1)           -- the call the steps read: keys, arguments, clock
ex_settings(C)                       --    and the settings in force
local B = ex_budget(C, ex_kept(C))   -- 1. how many URLs a page budget leaves room for
local P = ex_pop(C, ex_clock(C), B)  -- 2. URLs granted, each with its host's token
return ex_reply(C, B, P)
