-- leaky_meter.lua: a leaky bucket as a meter: a level that drains at rate
-- a second; a request that fits (level + 1 <= capacity) is let through
-- and raises it, one that does not is refused. It lets through the same
-- requests as a token bucket of the same rate and burst: GCRA, which the
-- crawl's token bucket is (politeness/tokens.lua), is this meter with the
-- level kept as a time.
-- KEYS[1] the host's meter (hash: level, at µs)
-- ARGV[1] rate, a second   ARGV[2] capacity
-- Returns {ok, now_µs}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate, cap = tonumber(ARGV[1]), tonumber(ARGV[2])
local s = redis.call('HMGET', KEYS[1], 'level', 'at')
local level, at = tonumber(s[1]) or 0, tonumber(s[2]) or now
level = math.max(0, level - (now - at) * rate / 1000000)
if level + 1 > cap + 1e-9 then return {0, string.format('%d', now)} end
level = level + 1
redis.call('HSET', KEYS[1], 'level', string.format('%.17g', level), 'at', string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], math.ceil(level / rate * 1000) + 1)
return {1, string.format('%d', now)}
