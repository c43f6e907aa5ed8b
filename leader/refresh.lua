-- refresh.lua: extend the lock, only while it still holds our value.
-- KEYS[1] the lock      ARGV[1] our value "<epoch>:<token>:<id>"      ARGV[2] TTL in ms
-- Returns 1 when extended, 0 when the lock expired or changed hands: an
-- expired lock is never silently re-acquired here, its loss is reported.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
