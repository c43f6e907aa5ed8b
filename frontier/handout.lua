-- requires: exchange_end
-- handout.lua: the frontier grants a worker process new URLs, in one
-- atomic call, in the same pipeline after exchange.lua (which ended the
-- process's leases) and again.lua (its late URLs, when it has any), and
-- before take.lua (which takes the URLs granted off their queues and
-- leases them):
--   1. how many URLs a page budget leaves room for, the late URLs
--      again.lua kept counted among those wanted;
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
-- KEYS: EX_KEYS (contract.lua), as exchange.lua's after the Bloom
--   filter's (it reads queues, ready, leases, stats, counter, config,
--   lengths, buckets, slowed, refill, capped, done, paused, hostrules,
--   settings, grants).
-- ARGV: one JSON object, exchangeArgs (exchangeargs.go), by name, then the
--   texts it names (as exchange.lua's):
--   expect      the process's exchanges Redis should hold: exchange.lua's
--               count, after it
--   instance    the crawl's instance the caller read (fr_ours)
--   want        URLs wanted (a late URL kept is one of them)
--   kept        texts: the late URLs' lease members (again.lua's back):
--               those still held count among the URLs wanted
--   lease_ms    a new lease's time (the grant lives as long)
--   rate, burst  each host's token bucket (absent rate: no limit, but a
--               host's pause and own delay still hold)
--   ahead_ms    the horizon: a host whose next token's window opens
--               within it is granted, its token reserved, and its URL
--               fetched in that window (tokens.lua's tb_window)
--   least_ms    the least window a token is good for (tb_window)
--   budget      pages for the whole crawl (0: none; -1: this shard's share,
--               the field 'allow' of its stats): grants stop where pages
--               fetched + URLs in flight reach it, and pages are reported
--   settings    the settings version the caller's rate, burst, budget and
--               caps come from (0: as seeded): older than the shard's,
--               the call grants nothing (wait 0: the caller reads the new
--               settings and asks again)
--   host_max    pages per host (0: none): a host that reached it has its
--               queued URLs dropped (by take.lua) when it comes up for a
--               grant, counted in stats as skipped_links:max_pages_per_host
--   lane        the lane granted from ('render': a worker with a browser)
--   ip, ip_shard, ip_shards  politeness per address (addrs.lua)
-- Reply: {0, n} when Redis's count of the process's exchanges is n, not
-- expect (nothing written); or 1, then one JSON object:
--   pages   pages fetched (with a budget), done (1: the crawl is over),
--   wait    ms until some host is due within the window when fewer than
--           want were granted (-1: nothing queued, or the crawl paused)
--   paused  1 while the crawl is paused (absent otherwise): nothing granted
--   settings  the settings version in force in the shard (absent: 0)
--   now_us  Redis's time of the grant (µs, a string; absent when nothing
--           was granted), from which the lists below count
--   hosts, counts  the hosts granted URLs, in order (a host may come
--           twice), and how many each: take.lua takes each host's URLs
--           in this order, the i-th URL taken of a host under its i-th
--           token
--   slot    per URL granted, in the order of hosts, µs from now_us to its
--           token's slot (absent: no URL granted has a token, the hosts
--           having no limit)
--   from, until  per URL granted, µs from now_us to when its token's
--           window opens and closes (tb_window): its request may go from
--           from until before until (until -1: no token, no end)
--   delays  host -> ms: the granted hosts whose own delay the grant kept to
--   rates   host -> its own rate (hostrules), which the grant kept to
--   fresh   host -> tat: the granted hosts without a delay whose bucket
--           was full (held no grant) before this call, each with the tat
--           it left (ms, a string): hostdelay.lua lets such a URL go when
--           its host's delay is learnt, if no grant came since
--   resolve, addrs  politeness per address: hosts whose address the
--           worker must find first; the granted hosts whose tokens came
--           from their address's bucket too, with the address
-- or the GONE error, with nothing written, when the crawl is gone.
local K = {}
for i, name in ipairs(EX_KEYS) do K[name] = KEYS[i] end
local A = cjson.decode(ARGV[1])
local count = tonumber(redis.call('GET', K.counter) or '0') or -1
if count ~= A.expect then -- a crawl gone (reset, seeded anew) has no count either: say which
  if not fr_ours(K.config, A.instance) then return redis.error_reply(FR_GONE) end
  return {0, count}
end
local why = fr_unsound_stats(K.stats) -- the budget reads them
if why then return redis.error_reply(why) end
local C = ex_call(K, A, 1)           -- the call the steps read: keys, arguments, clock
ex_settings(C)                       --    and the settings in force
local B = ex_budget(C, ex_kept(C))   -- 1. how many URLs a page budget leaves room for
local P = ex_pop(C, ex_clock(C), B)  -- 2. URLs granted, each with its host's token
return ex_reply(C, B, P)
