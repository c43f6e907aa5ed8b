-- fence.lua: prepended to every fenced script (see NewScript).
-- KEYS[1] the epoch counter (leader.EpochKey)      ARGV[1] the writer's epoch
-- A writer whose epoch is not the newest one minted is a leader that was
-- replaced (or paused past its TTL): its write is refused before the body
-- runs, so the body's own keys and arguments start at KEYS[2] and ARGV[2].
local fence_current = redis.call('GET', KEYS[1])
if fence_current ~= ARGV[1] then
  return redis.error_reply('FENCED writer epoch ' .. ARGV[1] .. ' is not the current epoch ' .. tostring(fence_current))
end
