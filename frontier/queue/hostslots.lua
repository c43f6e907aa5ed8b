-- requires: keys slots
-- hostslots.lua: a cap on a host's requests in flight (seed
-- --host-concurrency N), the leased semaphore of politeness/slots
-- (slots.lua) with the frontier's leases as its slots: a host's
-- semaphore holds the members of the leases of its URLs, each held while
-- its lease is (score 0: sl_live reads the lease's time in the shard's
-- leases set), so the worker's heartbeat, which renews the leases,
-- renews the slots too, and a worker killed mid-request frees its slots
-- when its leases lapse. The handout takes the slots in the call that
-- grants the host's tokens, as reservations of their own time (a grant's
-- life, as its grants key's), which take.lua, in the same pipeline, turns
-- into the leases it makes; a take that never came leaves them to lapse.
--
-- A host whose slots are all held is parked: its score in its ready set
-- is raised to when its first slot lapses (a dead worker's), so that the
-- pops look at the hosts they can grant rather than at it, and its tat is
-- kept aside in the full hash; a lease of it that ends (a page finished,
-- a URL given back) brings it back at that tat at once.
--
-- Keys, built from the shard's queues prefix, in the shard's slot:
--   queues .. ' slots ' .. host   zset: the host's semaphore
--   queues .. ' full'             hash host -> "tat parked": the hosts
--                                 parked, their tats and the score they
--                                 were parked at (ms)

-- hs_state is what a call needs of the slots: the queues Q (keys.lua),
-- the shard's leases set, the cap (0: none), now (ms) and a reservation's
-- lapse (ms).
local function hs_state(Q, leases, cap, now, lapse)
  return {Q = Q, leases = leases, cap = cap or 0, now = now, lapse = lapse, full = Q.queues .. ' full', anyFull = nil}
end

-- hs_key is host's semaphore.
local function hs_key(S, host) return S.Q.queues .. ' slots ' .. host end

-- hs_room is how many more requests host may have in flight (math.huge
-- without a cap), and when its first slot lapses (nil: none held).
local function hs_room(S, host)
  if S.cap <= 0 then return math.huge, nil end
  local n, first = sl_live(hs_key(S, host), S.now, function(members)
    local d = redis.call('ZMSCORE', S.leases, unpack(members))
    for i = 1, #members do d[i] = tonumber(d[i] or '0') end
    return d
  end)
  return math.max(S.cap - n, 0), first
end

-- hs_reserve takes n slots of host for a grant named tag (unique among
-- grants: the process's grants key and its exchange count), until the
-- grant's lapse; take.lua turns them into leases (hs_lease).
local function hs_reserve(S, host, n, tag)
  if S.cap <= 0 or n <= 0 then return end
  local ids = {}
  for j = 1, n do ids[j] = tag .. ' ' .. j end
  sl_take(hs_key(S, host), ids, S.lapse, S.lapse - S.now)
end

-- hs_lease: the grant tag reserved n slots of host, and its URLs were
-- leased as members (fewer, when its queue ran dry): the reservations end,
-- and the leases hold the slots (score 0: as long as the lease).
local function hs_lease(S, host, n, tag, members)
  if S.cap <= 0 or n <= 0 then return end
  local key, ids = hs_key(S, host), {}
  for j = 1, n do ids[j] = tag .. ' ' .. j end
  sl_free(key, ids)
  sl_take(key, members, 0, S.lapse - S.now)
end

-- hs_park: host has no free slot; its tat is kept aside, and its score
-- (returned, for the caller's ZADD) is raised to when its first slot
-- lapses, or tat if later.
local function hs_park(S, host, tat, first)
  local score = math.max(tat, first or tat)
  redis.call('HSET', S.full, host, string.format('%.17g %.17g', tat, score))
  S.anyFull = true
  return score
end

-- hs_parked is the tat host was parked with (nil: not parked), and it is
-- no longer parked: the pop that comes to it takes its tokens from there.
local function hs_parked(S, host)
  if S.anyFull == nil then S.anyFull = redis.call('EXISTS', S.full) == 1 end
  if not S.anyFull then return nil end
  local v = redis.call('HGET', S.full, host)
  if not v then return nil end
  redis.call('HDEL', S.full, host)
  return tonumber(string.match(v, '^(%S+)'))
end

-- hs_release ends the slots of the leases members (each "id\nhost\n…"),
-- which have just ended, and brings their hosts back from parking: each
-- at its tat, where its score is still the one it was parked at (a score
-- moved since was set by a grant, which knew better). Without a cap it
-- does nothing: slots left from a cap lifted lapse with their leases, and
-- a host parked then is due when its first slot lapses.
local function hs_release(S, members)
  if S.cap <= 0 or #members == 0 then return end
  local byHost = {}
  for _, m in ipairs(members) do
    local host = fr_second(m)
    local l = byHost[host]
    if not l then
      l = {}
      byHost[host] = l
    end
    l[#l + 1] = m
  end
  if S.anyFull == nil then S.anyFull = redis.call('EXISTS', S.full) == 1 end
  for host, l in pairs(byHost) do
    sl_free(hs_key(S, host), l)
    local v = S.anyFull and redis.call('HGET', S.full, host)
    if v then
      redis.call('HDEL', S.full, host)
      local tat, parked = string.match(v, '^(%S+) (%S+)$')
      local where = fr_rkey(S.Q, host)
      local now = redis.call('ZSCORE', where, host)
      if now and tonumber(now) == tonumber(parked) then
        redis.call('ZADD', where, 'XX', string.format('%.17g', tonumber(tat)), host)
      end
    end
  end
end
