-- acquire.lua: take the lock if it is free, and mint a fencing token.
-- KEYS[1] the lock          KEYS[2] the epoch counter (same hash tag)
-- ARGV[1] random token      ARGV[2] holder id      ARGV[3] TTL in milliseconds
-- Returns the new epoch, or false when someone else holds the lock.
-- The lock's value is "<epoch>:<token>:<id>", so one GET tells who leads and
-- under which epoch, and only the holder (who knows the token) matches it.
local epoch = tonumber(redis.call('GET', KEYS[2]) or '0') + 1
local value = epoch .. ':' .. ARGV[1] .. ':' .. ARGV[2]
if not redis.call('SET', KEYS[1], value, 'NX', 'PX', ARGV[3]) then
  return false
end
redis.call('SET', KEYS[2], epoch)
return epoch
