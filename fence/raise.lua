-- raise.lua: prepended to a fenced script that writes where the epoch
-- counter is not (another hash slot of a Redis Cluster; see NewScript).
-- KEYS[1] this slot's fence: the highest epoch that wrote here
-- ARGV[1] the writer's epoch
-- The store remembers the highest token it has seen and refuses a lower
-- one (Kleppmann's fencing, at the resource): once a new leader has
-- written here, the old one cannot.
local fence_seen = tonumber(redis.call('GET', KEYS[1]) or '0')
local fence_mine = tonumber(ARGV[1])
if fence_seen > fence_mine then
  return redis.error_reply('FENCED writer epoch ' .. ARGV[1] .. ' is older than epoch ' .. fence_seen .. ', which wrote here')
end
if fence_seen < fence_mine then redis.call('SET', KEYS[1], ARGV[1]) end
