-- requires: tokens
-- refund.lua: give back the tokens of a reservation whose event never
-- happened (Limiter.Cancel): tokens.lua's tb_refund, the rule the
-- crawl's pop runs for a request that never went.
-- KEYS[1] the bucket (tokens.lua: its tat, µs, and a pause)
-- ARGV[1] rate r, tokens per second (> 0, finite)
-- ARGV[2] when the reservation's tokens may be used, µs (its At + Delay)
-- ARGV[3] its first token's slot, µs; ARGV[4] n, its tokens, an interval
--         apart from that slot
-- Returns the µs the bucket's tat moved back, as a string ("0": nothing
-- went back): a reservation whose time has come, or that later tokens
-- were taken after, gives nothing back, so no one else's token moves.
local now = tb_now()
local interval = 1000000 / tonumber(ARGV[1])
local act, first, n = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local b = tb_read(KEYS[1])
if not b.tat or act < now then return '0' end
-- Relative to now, as tb_take's arithmetic: a float64 keeps the fractions
-- of a µs that an absolute time (1.8e15 µs) rounds away.
local slots = {}
for k = 0, n - 1 do slots[#slots + 1] = first - now + k * interval end
local floor
if b.paused_until > now then floor = b.paused_until - now end
local tat = now + tb_refund(b.tat - now, slots, interval, 1, floor)
if tat >= b.tat then return '0' end
-- The key's expiry stays: it was set for the later tat, and a bucket whose
-- tat has passed is a full one, as a missing key is.
redis.call('HSET', KEYS[1], 'tat', string.format('%.17g', tat))
return string.format('%.17g', b.tat - tat)
