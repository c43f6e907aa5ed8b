-- requires: base
-- keys.lua: a shard's queue keys as one table Q (fr_keys), and the lane, so
-- the ready set, a host waits in (queue.lua's lanes).

local function fr_keys(queues, ready, stats, lengths, refill, hostrules)
  return {queues = queues, ready = ready, stats = stats, lengths = lengths, refill = refill, hostrules = hostrules,
    levels = queues .. ' levels', anyLevels = nil, lifo = false, lanes = queues .. ' lanes', anyLanes = nil, laneOf = {}}
end

-- FR_RENDER is the render lane's name, and the suffix of its ready set.
local FR_RENDER = 'render'

-- fr_lane is host's lane, 'render' or 'plain' (the lanes hash, read once a
-- call whether it exists, then once a host).
local function fr_lane(Q, host)
  if Q.anyLanes == nil then Q.anyLanes = redis.call('EXISTS', Q.lanes) == 1 end
  if not Q.anyLanes then return 'plain' end
  local l = Q.laneOf[host]
  if l == nil then
    local v = redis.call('HMGET', Q.lanes, host, '*')
    l = v[1] or v[2] or 'plain'
    Q.laneOf[host] = l
  end
  return l
end

-- fr_ready_of is the ready set of a lane.
local function fr_ready_of(Q, lane)
  if lane == FR_RENDER then return Q.ready .. ' ' .. FR_RENDER end
  return Q.ready
end

-- fr_rkey is the ready set host waits in: its lane's.
local function fr_rkey(Q, host) return fr_ready_of(Q, fr_lane(Q, host)) end

-- fr_host_tat is where host's tat is kept and the tat (ms; nil: in
-- neither, its bucket is full): its lane's ready set while it has URLs
-- queued, else refill while its bucket is still filling (Q.refill).
local function fr_host_tat(Q, host)
  local where = fr_rkey(Q, host)
  local tat = redis.call('ZSCORE', where, host)
  if not tat then
    where = Q.refill
    tat = redis.call('ZSCORE', where, host)
  end
  return where, tonumber(tat)
end
