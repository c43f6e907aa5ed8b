-- fence_each.lua: the store's side of a Redlock grant's epochs. Redlock
-- mints no single token: each master that granted the lock minted its
-- own epoch. The store keeps, for each master, the highest epoch that
-- wrote (fence/raise.lua's rule, a master at a time) and refuses a write
-- that carries a lower one for any master. Two grants' majorities share a
-- master, whose epoch grew with the later grant: once the later holder
-- wrote, the earlier one cannot.
-- KEYS[1] the value written   KEYS[2..] the store's fence of each master
-- ARGV[1] the value   ARGV[2..] the writer's epoch of each master (0:
-- that master did not grant it)
for i = 2, #KEYS do
  local mine = tonumber(ARGV[i])
  local seen = tonumber(redis.call('GET', KEYS[i]) or '0')
  if mine > 0 and seen > mine then
    return redis.error_reply('FENCED master ' .. (i - 1) .. ': epoch ' .. mine .. ' is older than ' .. seen .. ', which wrote here')
  end
end
for i = 2, #KEYS do
  if tonumber(ARGV[i]) > tonumber(redis.call('GET', KEYS[i]) or '0') then redis.call('SET', KEYS[i], ARGV[i]) end
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
