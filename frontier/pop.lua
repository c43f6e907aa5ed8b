-- pop.lua: take the oldest queued item and hold it under a lease.
-- KEYS[1] queue (list)   KEYS[2] in-flight (hash id -> item)   KEYS[3] leases (zset id -> expiry ms)
-- KEYS[4] stats hash     KEYS[5] done flag
-- ARGV[1] lease id (unique per pop)   ARGV[2] lease length in ms
-- Returns {item or false, pages fetched so far, done flag}: the counters
-- ride along so a worker needs no extra round trip to check the page
-- budget or whether the crawl is over. The item is never only in a
-- worker's memory: until acked it is in the in-flight hash, and when its
-- lease runs out the scheduler puts it back (schedule.lua).
local pages = tonumber(redis.call('HGET', KEYS[4], 'pages') or '0')
local done = redis.call('EXISTS', KEYS[5])
local item = redis.call('RPOP', KEYS[1])
if not item then return {false, pages, done} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[2], ARGV[1], item)
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[1])
return {item, pages, done}
