-- requires: hostbucket addrs
-- token.lua: one token of a host's bucket for a request that is no popped
-- URL's: a subresource a rendered page loads (crawl/render.go). It is
-- taken by the pop's own rule (hb_tokens, hb_take): the
-- host's own rate, Crawl-delay, adaptive interval and pause all hold, and
-- the host's tat moves as a pop's would, in its lane's ready set, or in
-- refill when nothing of it is queued. So a host's rate holds over its
-- pages and their subresources together, whichever worker fetches them.
-- With politeness per address (addrs.lua), a host whose address is known
-- takes its address's token too, by the pop's rule (ip_slots); one whose
-- address no pop has needed yet (a third party's) keeps to its own.
-- KEYS[1] the shard's config (fr_ours)   KEYS[2] queues (the prefix)
-- KEYS[3] ready   KEYS[4] refill   KEYS[5] slowed   KEYS[6] buckets (the
-- prefix)   KEYS[7] hostrules   KEYS[8] paused
-- ARGV[1] the crawl instance the caller read   ARGV[2] the host
-- ARGV[3] the crawl's rate (0: no limit)   ARGV[4] its burst
-- ARGV[5] a token's least window, ms   ARGV[6] the horizon, ms: how far
-- ahead a token may be taken   ARGV[7] '1' for politeness per address
-- ARGV[8] this shard's place   ARGV[9] the shards' count
-- Returns {1, slot, from, until} (µs from now: the request may go from
-- from until before until; until -1: no limit, no end), or {0, ms} when
-- the host has no token within the horizon (paused, blocked, or its
-- bucket spent): ask again in ms; or the GONE error.
if not fr_ours(KEYS[1], ARGV[1]) then return redis.error_reply(FR_GONE) end
local host = ARGV[2]
local H = hb_clock({slowed = KEYS[5], buckets = KEYS[6], hostrules = KEYS[7]}, tonumber(ARGV[3]), tonumber(ARGV[4]),
  tonumber(ARGV[5]), tb_now(), tonumber(ARGV[6]))
if redis.call('EXISTS', KEYS[8]) == 1 then return {0, 1000} end -- the crawl is paused
if hb_blocked(H, host) then return {0, tonumber(ARGV[6])} end
local Q = fr_keys(KEYS[2], KEYS[3], nil, nil, KEYS[4])
local where, tat = fr_host_tat(Q, host)
tat = tat or 0
H.marks[host] = redis.call('HGET', KEYS[5], host)
local k, b, r, size, first = hb_tokens(H, host, 1, tat)
local I, slots, early, late, anext
if k > 0 and r > 0 and ARGV[7] == '1' and not hb_rule(H, host) then
  I = ip_begin(H, {ip = true, ip_shard = tonumber(ARGV[8]), ip_shards = tonumber(ARGV[9])}, KEYS[2], math.floor(H.tnow))
  ip_addresses(I, {host})
  if I.addrOf[host] then
    slots, early, late, anext = ip_slots(I, H, host, 1, r, size, tat)
    if #slots == 0 then return {0, math.max(1, math.ceil(anext - early - H.horizon))} end
  end
end
if k == 0 then
  -- b is the tat, the next token's slot: it may be taken once its window
  -- opens within the horizon.
  local next = b
  local bk = HB_NONE
  if H.marks[host] then bk = hb_bucket(H, host) end
  local r2, size2 = hb_rate(H, bk, host)
  if r2 > 0 then next = tb_opens(b, r2, size2, H.least) end
  return {0, math.max(1, math.ceil(next - H.horizon))}
end
if r == 0 then return {1, 0, 0, -1} end
local G = hb_grants()
if slots then
  hb_grant_slots(G, H.tnow, slots, 1, early, late)
  redis.call('ZADD', where, fr_tat(ip_take(I, host, slots, 1, r)), host)
  ip_write(I)
else
  redis.call('ZADD', where, fr_tat(hb_take(H, G, 1, r, size, first)), host)
end
hb_granted(H, host, b)
return {1, G.slots[1], G.froms[1], G.untils[1]}
