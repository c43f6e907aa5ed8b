-- defer.lua: give an in-flight item back, to be fetched no earlier than
-- ARGV[3] ms from now (server time): never dropped, never busy-looped.
-- KEYS[1] in-flight   KEYS[2] leases   KEYS[3] deferred (zset item -> ready ms)
-- ARGV[1] lease id    ARGV[2] the item to store (may differ, e.g. attempts+1)   ARGV[3] delay ms
-- Returns 1, or 0 when the lease was lost.
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[2])
return 1
