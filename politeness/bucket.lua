-- bucket.lua: take n tokens from a token bucket, or say how long to wait.
-- KEYS[1] the bucket (hash: tokens, last)
-- ARGV[1] rate r, tokens per second (> 0, finite)
-- ARGV[2] burst b, the bucket's size (integer >= n)
-- ARGV[3] n, tokens wanted
-- ARGV[4] the longest wait the caller accepts, in ns (-1: any)
-- Returns {ok, wait_ns}: ok = 1 when the tokens are taken (the caller may act
-- after wait_ns), 0 when the wait would be longer than allowed (nothing changes).
--
-- The arithmetic mirrors golang.org/x/time/rate step for step, in the same
-- float64 operations, so both decide alike on the same clock; that clock is
-- the server's (TIME, microseconds), never a worker's.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local max_wait = tonumber(ARGV[4])

local state = redis.call('HMGET', KEYS[1], 'tokens', 'last')
local tokens, last = burst, now -- a missing bucket is a full one
if state[1] then
  tokens = tonumber(state[1])
  last = tonumber(state[2])
end
if now < last then last = now end

-- Refill: elapsed.Seconds() * rate, capped at the burst.
local elapsed = now - last
local sec = math.floor(elapsed / 1000000)
local seconds = sec + ((elapsed - sec * 1000000) * 1000) / 1e9
tokens = tokens + seconds * rate
if tokens > burst then tokens = burst end

tokens = tokens - n
local wait = 0
if tokens < 0 then
  wait = math.floor((-tokens / rate) * 1e9)
end
if max_wait >= 0 and wait > max_wait then
  return {0, string.format('%.17g', wait)}
end

redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'last', string.format('%.17g', now))
-- The key lives until the bucket would be full again; after that a missing
-- key means exactly the same thing, so idle hosts cost no memory.
local full_ms = math.ceil((burst - tokens) / rate * 1000) + 1
redis.call('PEXPIRE', KEYS[1], full_ms)
return {1, string.format('%.17g', wait)}
