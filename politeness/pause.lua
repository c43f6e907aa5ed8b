-- pause.lua: pause a host for every worker, in its token bucket's hash:
-- the host answered 429 or 503 (the server's "not now"). bucket.lua gives
-- no token before the pause ends.
-- KEYS[1] the bucket (hash: tat, paused_until µs, pauses, why: tokens.lua)
-- KEYS[2] optional: an index of pauses in the bucket's slot (zset member
--         -> when its pause ends, ms to the µs: a score rounded up would
--         say a pause lasts longer than it does), for readers that list
--         paused hosts without a scan; ended pauses leave it here
-- KEYS[3] optional (with KEYS[2]): a mark, a hash in the bucket's slot
--         where the member is set to 1 in the same step, for readers that
--         read only the buckets of marked members (frontier's slowed):
--         a pause they were not told of would not hold
-- ARGV[1] the server's Retry-After in ms (0: none)
-- ARGV[2] the first pause in ms   ARGV[3] the longest pause in ms
-- ARGV[4] how long the count of pauses is kept past a pause, in ms
-- ARGV[5] optional: why, kept in the bucket   ARGV[6] the index's member
-- The pause is the server's Retry-After, or the back-off, whichever is
-- longer; the back-off doubles with each pause that no granted token has
-- halved since (bucket.lua). Time is the server's.
-- Returns the pause in ms.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local state = redis.call('HMGET', KEYS[1], 'paused_until', 'pauses')
local n = tonumber(state[2] or '0') + 1
local backoff = math.min(tonumber(ARGV[2]) * 2 ^ (n - 1), tonumber(ARGV[3]))
local pause = math.max(tonumber(ARGV[1]), backoff)
local untl = math.max(tonumber(state[1] or '0'), now + pause * 1000)
redis.call('HSET', KEYS[1], 'paused_until', string.format('%.17g', untl), 'pauses', n)
if ARGV[5] and ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'why', ARGV[5]) end
local ttl = redis.call('PTTL', KEYS[1])
redis.call('PEXPIRE', KEYS[1], math.max(ttl, math.ceil((untl - now) / 1000) + tonumber(ARGV[4])))
if KEYS[2] then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', math.floor(now / 1000))
  redis.call('ZADD', KEYS[2], string.format('%.17g', untl / 1000), ARGV[6])
end
if KEYS[3] then redis.call('HSET', KEYS[3], ARGV[6], '1') end
return math.ceil((untl - now) / 1000)
