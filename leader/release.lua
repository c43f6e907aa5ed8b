-- release.lua: delete the lock, only while it still holds our value.
-- KEYS[1] the lock      ARGV[1] our value "<epoch>:<token>:<id>"
-- Returns 1 when deleted, 0 when it was no longer ours (a GET, compare and
-- DEL as three client calls could delete the next holder's lock).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
