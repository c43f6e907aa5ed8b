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
local X = {K = {slowed = KEYS[5], buckets = KEYS[6], hostrules = KEYS[7]}, rate = tonumber(ARGV[3]),
  burst = tonumber(ARGV[4]), least = tonumber(ARGV[5]), nowus = tb_now(), marks = {}, rules = false,
  slots = {}, froms = {}, untils = {}}
X.tnow = X.nowus / 1000
X.now = math.floor(X.tnow) -- ms, as answers' expiries count (addrs.lua)
X.horizon = X.tnow + tonumber(ARGV[6])
if redis.call('EXISTS', KEYS[8]) == 1 then return {0, 1000} end -- the crawl is paused
if hb_blocked(X, host) then return {0, tonumber(ARGV[6])} end
local Q = fr_keys(KEYS[2], KEYS[3], nil, nil, KEYS[4])
local where, tat = fr_host_tat(Q, host)
tat = tat or 0
X.marks[host] = redis.call('HGET', KEYS[5], host)
local k, b, r, size, first = hb_tokens(X, host, 1, tat)
local slots, early, late, anext
if k > 0 and r > 0 and ARGV[7] == '1' and not hb_rule(X, host) then
  X.Q = Q
  ip_begin(X, {ip = true, ip_shard = tonumber(ARGV[8]), ip_shards = tonumber(ARGV[9])})
  ip_addresses(X, {host})
  X.resolve = {}
  if X.addrOf[host] then
    slots, early, late, anext = ip_slots(X, host, 1, r, size, tat)
    if #slots == 0 then return {0, math.max(1, math.ceil(anext - early - X.horizon))} end
  end
end
if k == 0 then
  -- b is the tat, the next token's slot: it may be taken once its window
  -- opens within the horizon.
  local next = b
  local bk = HB_NONE
  if X.marks[host] then bk = hb_bucket(X, host) end
  local r2, size2 = hb_rate(X, bk, host)
  if r2 > 0 then next = tb_opens(b, r2, size2, X.least) end
  return {0, math.max(1, math.ceil(next - X.horizon))}
end
if r == 0 then return {1, 0, 0, -1} end
if slots then
  redis.call('ZADD', where, fr_tat(ip_take(X, host, slots, 1, early, late, r)), host)
  ip_write(X)
  hb_granted(X, host, b)
  return {1, X.slots[1], X.froms[1], X.untils[1]}
end
redis.call('ZADD', where, fr_tat(hb_take(X, 1, r, size, first)), host)
hb_granted(X, host, b)
return {1, X.slots[1], X.froms[1], X.untils[1]}
