-- requires: tokens
-- bucket.lua: take n tokens from a token bucket, or say how long to wait.
-- KEYS[1] the bucket (tokens.lua: its tat, µs, and a pause)
-- ARGV[1] rate r, tokens per second (> 0, finite)
-- ARGV[2] burst b, the bucket's size (integer >= n)
-- ARGV[3] n, tokens wanted
-- ARGV[4] the longest wait the caller accepts, in ns (-1: any)
-- ARGV[5] how long a paused host's count of pauses is kept, in ms
-- Returns {ok, wait_ns, now_µs, slot_µs}: ok = 1 when the tokens are taken
-- (the caller may act after wait_ns), 0 when the wait would be longer than
-- allowed (nothing changes); now is the server's clock when it decided;
-- slot is the first token's place in the bucket's schedule (its tat before,
-- or now when the bucket was full), the next ones an interval apart: what
-- refund.lua is told to give them back.
local now = tb_now()
local interval = 1000000 / tonumber(ARGV[1]) -- µs a token
local max_wait = tonumber(ARGV[4])

local b = tb_read(KEYS[1])
-- A paused host (pause.lua: it answered 429 or 503) gives no token before
-- the pause ends, whatever the caller accepts to wait; nothing changes.
if now < b.paused_until then
  return {0, string.format('%.17g', (b.paused_until - now) * 1000), string.format('%d', now), '0'}
end

local slot = math.max(b.tat or now, now)
local tat, wait = tb_take(b.tat or now, now, interval, tonumber(ARGV[2]), tonumber(ARGV[3]))
wait = math.max(0, math.floor(wait * 1000)) -- µs to ns
if max_wait >= 0 and wait > max_wait then
  return {0, string.format('%.17g', wait), string.format('%d', now), '0'}
end
tb_store(KEYS[1], b, tat, now, tonumber(ARGV[5]))
return {1, string.format('%.17g', wait), string.format('%d', now), string.format('%.17g', slot)}
