-- bucket.lua: take n tokens from a token bucket, or say how long to wait.
-- KEYS[1] the bucket (hash: tokens, last; paused_until, pauses: pause.lua)
-- ARGV[1] rate r, tokens per second (> 0, finite)
-- ARGV[2] burst b, the bucket's size (integer >= n)
-- ARGV[3] n, tokens wanted
-- ARGV[4] the longest wait the caller accepts, in ns (-1: any)
-- ARGV[5] how long a paused host's count of pauses is kept, in ms
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

local state = redis.call('HMGET', KEYS[1], 'tokens', 'last', 'paused_until', 'pauses')
local tokens, last = burst, now -- a missing bucket is a full one
if state[1] then
  tokens = tonumber(state[1])
  last = tonumber(state[2])
end
-- A paused host (pause.lua: it answered 429 or 503) gives no token before
-- the pause ends, whatever the caller accepts to wait; nothing changes.
local paused_until = tonumber(state[3] or '0')
if now < paused_until then
  return {0, string.format('%.17g', (paused_until - now) * 1000)}
end
local pauses = tonumber(state[4] or '0')
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
-- key means exactly the same thing, so idle hosts cost no memory. A host
-- that was paused keeps its count of pauses longer (ARGV[5] ms), halved by
-- each token granted: pauses grow on repeats and decay on success.
local full_ms = math.ceil((burst - tokens) / rate * 1000) + 1
if pauses > 0 then
  redis.call('HSET', KEYS[1], 'pauses', math.floor(pauses / 2))
  full_ms = math.max(full_ms, tonumber(ARGV[5]))
end
redis.call('PEXPIRE', KEYS[1], full_ms)
return {1, string.format('%.17g', wait)}
