-- redlock_acquire.lua: Redlock's step on one master: take the lock if it
-- is free, and mint this master's epoch for the grant (the same script
-- leader/acquire.lua is on one Redis: SET NX PX, then INCR).
-- KEYS[1] the lock   KEYS[2] this master's epoch counter
-- ARGV[1] the holder's random value (the same on every master)
-- ARGV[2] the TTL, ms
-- Returns the epoch, or 0 when the lock is held.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0
