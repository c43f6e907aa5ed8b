-- robots_get.lua: read an origin's robots.txt entry and, when it holds
-- nothing to go by (none stored, or an unavailable one due to be tried
-- again), take the fetching worker's lock, in one call: a worker that
-- fetches pays one round trip for both, and no other worker can store an
-- answer between its read and its lock.
-- KEYS[1] the origin's robots hash   KEYS[2] its lock
-- ARGV[1] a token for the lock   ARGV[2] the lock's TTL, ms
-- Returns {got, status, body, failures, first_fail, retry_at, pttl, now}:
-- got is 1 when this call took the lock (the caller fetches), the next
-- five are the hash's fields (nil: absent), pttl the hash's PTTL and now
-- Redis's time, ms.
local v = redis.call('HMGET', KEYS[1], 'status', 'body', 'failures', 'first_fail', 'retry_at')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local got = 0
if not v[1] or (v[5] and now >= tonumber(v[5])) then
  if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then got = 1 end
end
-- false, not nil, keeps a field's place in the reply (and reads as nil)
return {got, v[1] or false, v[2] or false, v[3] or false, v[4] or false, v[5] or false, redis.call('PTTL', KEYS[1]), now}
