-- requires: keys slots addrkeys
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
-- With politeness per server address (seed --politeness ip), the cap
-- holds for an address too: a URL is granted with a slot of its host and
-- one of its address, each a semaphore of the same leases. A host parked
-- for its address's sake is noted under the address, and any lease of the
-- address that ends brings it back. On a Redis Cluster each shard keeps
-- an address's semaphore of its own (no script reaches two slots), so an
-- address whose hosts sit in S shards may see up to S times the cap.
--
-- Keys, built from the shard's queues prefix, in the shard's slot:
--   queues .. ' slots ' .. host   zset: the host's semaphore
--   queues .. ' slots@' .. addr   zset: the address's semaphore
--   queues .. ' full'             hash host -> "tat parked": the hosts
--                                 parked, their tats and the score they
--                                 were parked at (ms)
--   queues .. ' full@' .. addr    set: the hosts parked for the address

-- hs_state is what a call needs of the slots: the queues Q (keys.lua),
-- the shard's leases set, the cap (0: none), now (ms), a reservation's
-- lapse (ms), and whether an address has a cap too (politeness per
-- address).
local function hs_state(Q, leases, cap, now, lapse, ip)
  local S = {Q = Q, leases = leases, cap = cap or 0, now = now, lapse = lapse, ip = ip and (cap or 0) > 0,
    full = Q.queues .. ' full', anyFull = nil}
  -- A slot held by a lease lapses with it (sl_live asks this of the
  -- holders of score 0): its score in the shard's leases, or 0 when gone.
  S.leaseTimes = function(members)
    local d = redis.call('ZMSCORE', leases, unpack(members))
    for i = 1, #members do d[i] = tonumber(d[i] or '0') end
    return d
  end
  return S
end

-- HS_KEEP is how long a host's (an address's) semaphore lives after its
-- last take (ms): a day. Its reservations lapse by their scores; its leases are renewed by heartbeats that do not touch
-- it, so it must outlive any of them (a fetch is bounded far below a
-- day); a slot that ends is removed (hs_release), and the last one gone
-- deletes the key, so only a killed worker's slots wait that long, on a
-- host no pop looks at again.
local HS_KEEP = '86400000'

-- hs_key is host's semaphore; hs_addr_key an address's.
local function hs_key(S, host) return S.Q.queues .. ' slots ' .. host end
local function hs_addr_key(S, addr) return S.Q.queues .. ' slots@' .. addr end

-- hs_keys are the semaphores a URL of host, of address addr (false: none
-- counted), takes a slot of: its host's, and with a cap per address its
-- address's.
local function hs_keys(S, host, addr)
  if S.ip and addr then return {hs_key(S, host), hs_addr_key(S, addr)} end
  return {hs_key(S, host)}
end

-- hs_free is how many more slots the semaphore at key has free, and when
-- its first slot lapses (nil: none held).
local function hs_free(S, key)
  local n, first = sl_live(key, S.now, S.leaseTimes)
  return math.max(S.cap - n, 0), first
end

-- hs_room is how many more requests host, of address addr (false: none
-- counted), may have in flight (math.huge without a cap), when the first
-- slot that holds it lapses, and whether it is its address that holds it.
local function hs_room(S, host, addr)
  if S.cap <= 0 then return math.huge, nil, false end
  local room, first = hs_free(S, hs_key(S, host))
  if room > 0 and S.ip and addr then
    local aroom, afirst = hs_free(S, hs_addr_key(S, addr))
    if aroom < room then return aroom, afirst, aroom == 0 end
  end
  return room, first, false
end

-- hs_ids are the names of n reservations of a grant named tag (unique
-- among grants: the process's grants key, its exchange count, the host's
-- place in the grant).
local function hs_ids(tag, n)
  local ids = {}
  for j = 1, n do ids[j] = tag .. ' ' .. j end
  return ids
end

-- hs_reserve takes n slots of host (and of its address addr, or false)
-- for a grant named tag, until the grant's lapse; take.lua turns them into
-- leases (hs_lease).
local function hs_reserve(S, host, addr, n, tag)
  if S.cap <= 0 or n <= 0 then return end
  local ids = hs_ids(tag, n)
  for _, key in ipairs(hs_keys(S, host, addr)) do
    sl_take(key, ids, S.lapse)
    redis.call('PEXPIRE', key, HS_KEEP)
  end
end

-- hs_lease: the grant tag reserved n slots of host (and of addr), and its
-- URLs were leased as members (fewer, when its queue ran dry): the
-- reservations end, and the leases hold the slots (score 0: as long as
-- the lease).
local function hs_lease(S, host, addr, n, tag, members)
  if S.cap <= 0 or n <= 0 then return end
  local ids = hs_ids(tag, n)
  for _, key in ipairs(hs_keys(S, host, addr)) do
    sl_free(key, ids)
    sl_take(key, members, 0)
    redis.call('PEXPIRE', key, HS_KEEP)
  end
end

-- hs_park: host has no free slot; its tat is kept aside, and its score
-- (returned, for the caller's ZADD) is raised to when its first slot
-- lapses, or tat if later. Both are kept as the ready set holds a score
-- (fr_tat), so that hs_unpark finds the score it parked the host at. A
-- host held by its address (addr) is noted under it.
local function hs_park(S, host, tat, first, addr)
  local score = math.max(tat, first or tat)
  redis.call('HSET', S.full, host, fr_tat(tat) .. ' ' .. fr_tat(score))
  if addr then
    local key = S.Q.queues .. ' full@' .. addr
    redis.call('SADD', key, host)
    redis.call('PEXPIRE', key, string.format('%d', math.max(math.ceil(score - S.now), 1000)))
  end
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

-- hs_unpark brings host back from parking, if parked: at its tat, where
-- its score is still the one it was parked at.
local function hs_unpark(S, host)
  local v = S.anyFull and redis.call('HGET', S.full, host)
  if not v then return end
  redis.call('HDEL', S.full, host)
  local tat, parked = string.match(v, '^(%S+) (%S+)$')
  local where = fr_rkey(S.Q, host)
  local now = redis.call('ZSCORE', where, host)
  if now and tonumber(now) == tonumber(parked) then redis.call('ZADD', where, 'XX', tat, host) end
end

-- hs_release ends the slots of the leases members (each "id\nhost\n…"),
-- which have just ended (their hosts' and, with politeness per address,
-- their addresses' as the shard knows them now: a slot of an address that
-- changed ends with its lease all the same, sl_live), and brings their
-- hosts, and the hosts parked for their addresses, back from parking: each
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
  local dns = S.ip and ip_keys(S.Q.queues).dns
  for host, l in pairs(byHost) do
    sl_free(hs_key(S, host), l)
    hs_unpark(S, host)
    local addr = dns and (ip_literal(host) or ip_answer(redis.call('HGET', dns, host), S.now))
    if addr then -- the address's slots end with the leases (sl_live); its hosts parked come back
      sl_free(hs_addr_key(S, addr), l)
      local key = S.Q.queues .. ' full@' .. addr
      local waiting = redis.call('SMEMBERS', key)
      if #waiting > 0 then
        redis.call('DEL', key)
        for _, h in ipairs(waiting) do hs_unpark(S, h) end
      end
    end
  end
end
