-- redlock_release.lua: delete the lock if it holds this holder's value
-- (sent to every master, granted or not: a grant whose reply was lost is
-- released too). KEYS[1] the lock   ARGV[1] the holder's value
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
