-- requires: keys
-- lane.lua: put a host in a lane (queue.lua's lanes),
-- 'render' for a host whose pages need a browser or 'plain', or with host
-- '*' set the lane of every host not given one of its own. A host queued
-- moves to its new lane's ready set with its tat, so its politeness is
-- untouched; the shard's wake channel then says there is work, for idle
-- workers of that lane. With '*' every host without a lane of its own
-- moves: one step over all of them, meant for a crawl's seeding.
-- KEYS[1] the shard's config (fr_ours)   KEYS[2] queues (the prefix)
-- KEYS[3] ready (the plain lane's)
-- ARGV[1] the crawl instance the caller read   ARGV[2] the host, or '*'
-- ARGV[3] the lane
-- Returns how many hosts moved between ready sets, or the GONE error.
if not fr_ours(KEYS[1], ARGV[1]) then return redis.error_reply(FR_GONE) end
local Q = fr_keys(KEYS[2], KEYS[3])
local host, lane = ARGV[2], ARGV[3]
if lane ~= FR_RENDER then lane = 'plain' end
local to, moved = fr_ready_of(Q, lane), 0
local function move(from, h)
  local tat = redis.call('ZSCORE', from, h)
  if not tat then return end
  redis.call('ZREM', from, h)
  redis.call('ZADD', to, tat, h)
  moved = moved + 1
end
if host ~= '*' then
  local from = fr_rkey(Q, host)
  redis.call('HSET', Q.lanes, host, lane)
  if from ~= to then move(from, host) end
else
  redis.call('HSET', Q.lanes, '*', lane)
  local other = fr_ready_of(Q, FR_RENDER)
  if lane == FR_RENDER then other = Q.ready end
  local all = redis.call('ZRANGE', other, 0, -1)
  for s = 1, #all, 1000 do -- unpack holds a few thousand at most
    local part = {unpack(all, s, math.min(s + 999, #all))}
    local own = redis.call('HMGET', Q.lanes, unpack(part))
    for i, h in ipairs(part) do
      if not own[i] then move(other, h) end
    end
  end
end
if moved > 0 then redis.call('PUBLISH', Q.queues .. 'wake', '1') end
return moved
