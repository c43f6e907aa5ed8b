-- requires: slots
-- acquire.lua: Semaphore.Acquire, one atomic call. A holder asks for a
-- slot of the semaphore at KEYS[1], of ARGV[1] slots, to hold ARGV[2] ms
-- (the lease; renew.lua extends it); ARGV[3] is the holder.
-- Reply: {1, held} when the holder has a slot (a holder that has one
-- already has it extended: a retried call takes no second slot), held
-- counting it; or {0, held, wait}: every slot is held, and the first to
-- lapse does in wait ms (sooner if it is released).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local key, size, ms, holder = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local n, first = sl_live(key, now)
if redis.call('ZSCORE', key, holder) then
  sl_take(key, {holder}, now + ms, ms)
  return {1, n}
end
if n >= size then return {0, n, first - now} end
sl_take(key, {holder}, now + ms, ms)
return {1, n + 1}
