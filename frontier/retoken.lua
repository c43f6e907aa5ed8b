-- retoken.lua (lib.lua, politeness's tokens.lua, exchange_steps.lua, then
-- this): a URL whose token's window closed before its request could go
-- (it waited in its worker's buffer, or for its host's robots.txt) asks
-- its host's bucket again, by the pop's own rule at Redis's now: its old
-- token goes back while it is the host's last (ex_refund's rule), and the
-- host gives it a new one if its next token's window opens by now
-- (ex_pop_host's, with no horizon ahead). The request then keeps the new
-- token's window, and the host's bound holds as for any popped URL: the
-- late token is no longer counted, or stays counted and wasted. When the
-- host has no token now (its bucket spent by others' requests, a pause,
-- a Crawl-delay), nothing is written: the URL goes back in its worker's
-- next exchange, its token refunded there, as before. The lease is read,
-- never ended (a worker's leases end in its exchanges).
-- KEYS exchange.lua's after the Bloom filter's (EX_KEYS): of those, ready,
--   refill, leases, slowed, buckets and stats are used
-- ARGV[1] the lease ("id\nhost\nitem-json")
-- ARGV[2] its token's slot (µs, Redis's clock; 0: unknown, not refunded)
-- ARGV[3] rate, ARGV[4] burst (the crawl's, as an exchange sends them;
--         rate 0: no limit), ARGV[5] least_ms (tb_window)
-- Returns {0} when the lease was lost, {1} when the host has no token
-- now, else {2, now_us, slot, from, until}: the new token as an
-- exchange's reply gives a popped URL's (µs from now_us; until -1: no
-- token, the host has no limit now).
local K = {}
for i, name in ipairs(EX_KEYS) do K[name] = KEYS[i] end
local member, grant = ARGV[1], tonumber(ARGV[2])
if not redis.call('ZSCORE', K.leases, member) then return {0} end
local host = fr_second(member)
local X = {K = K, A = {}, rate = tonumber(ARGV[3]), burst = tonumber(ARGV[4]), least = tonumber(ARGV[5]),
  nowus = tb_now(), marks = {}, slots = {}, froms = {}, untils = {}}
X.tnow = X.nowus / 1000
X.horizon = X.tnow -- a token now, not one reserved ahead
X.marks[host] = redis.call('HGET', K.slowed, host)
-- The host's tat: in ready, or in refill when its queue ran dry; in
-- neither, its bucket is full.
local where = K.ready
local tat = redis.call('ZSCORE', where, host)
if not tat then
  where = K.refill
  tat = redis.call('ZSCORE', where, host)
end
tat = tonumber(tat or '0')
local b = EX_NONE
if X.marks[host] then b = ex_bucket(X, host) end
local r, size = ex_host_rate(X, b, host)
if r == 0 then return {2, string.format('%d', X.nowus), 0, 0, -1} end -- no limit now: nothing to take
if grant > 0 and tat > 0 and tat <= grant / 1000 + 1000 / r + 0.002 then
  -- Its token is the host's last: it goes back before one is taken (µs
  -- to ms; the slots travel rounded to the µs), never before a pause's end.
  tat = math.max(tat - 1000 / r, ex_paused_tat(b, r, size))
end
local k, _, r2, size2, first = ex_host_tokens(X, host, 1, tat)
if k == 0 then return {1} end
if r2 == 0 then return {2, string.format('%d', X.nowus), 0, 0, -1} end
redis.call('ZADD', where, fr_tat(ex_take_tokens(X, 1, r2, size2, first)), host)
if b.pauses > 0 then -- a grant halves the count of pauses (pause.lua)
  redis.call('HSET', K.buckets .. host, 'pauses', fr_int(math.floor(b.pauses / 2)))
end
return {2, string.format('%d', X.nowus), X.slots[1], X.froms[1], X.untils[1]}
