-- pop.lua: take the oldest queued item and hold it under a lease.
-- KEYS[1] queue (list)   KEYS[2] in-flight (hash id -> item)   KEYS[3] leases (zset id -> expiry ms)
-- ARGV[1] lease id (unique per pop)   ARGV[2] lease length in ms
-- Returns the item, or false when the queue is empty. The item is never
-- only in a worker's memory: until acked it is in the in-flight hash, and
-- when its lease runs out the scheduler puts it back (reclaim.lua).
local item = redis.call('RPOP', KEYS[1])
if not item then return false end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[2], ARGV[1], item)
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[1])
return item
