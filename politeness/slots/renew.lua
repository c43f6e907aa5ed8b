-- requires: slots
-- renew.lua: Semaphore.Renew. The holder ARGV[2] of a slot of the
-- semaphore at KEYS[1] holds it ARGV[1] ms more, if it still holds it:
-- one whose slot lapsed has lost it (another may hold it now) and is not
-- given it back. Reply: 1 held and extended, 0 lost.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, ms, holder = KEYS[1], tonumber(ARGV[1]), ARGV[2]
local d = tonumber(redis.call('ZSCORE', key, holder) or '0')
if d <= now then
  sl_free(key, {holder})
  return 0
end
sl_take(key, {holder}, now + ms, ms)
return 1
