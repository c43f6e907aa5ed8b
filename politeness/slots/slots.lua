-- slots.lua: a counting semaphore whose slots are leases, as Lua
-- functions other scripts start with: acquire.lua and renew.lua (the
-- Semaphore's scripts), and frontier's pop, which takes a host's slot in
-- the same call that grants its URL (frontier/queue/hostslots.lua). A
-- semaphore is one sorted set: holder -> the time its slot lapses (ms,
-- Redis's clock). A slot is held while that time is ahead; a holder that
-- stops renewing (its process killed) loses it when the time passes, and
-- the next call that counts the holders drops it. Nothing counts up and
-- down: the count is always the set's live members, read afresh, so no
-- crash between an increment and its decrement can leak a slot.

-- sl_live reads semaphore key at now (ms) and drops the holders whose
-- slots lapsed. A holder's score is its deadline, or 0 when its deadline
-- is kept elsewhere: then deadlines (a function of a list of such
-- holders, returning their deadlines in order, nil for one that is gone)
-- says it (frontier: a slot held by a lease lapses with the lease). It
-- returns how many hold a slot, and the earliest of their deadlines (nil
-- when none holds one).
local function sl_live(key, now, deadlines)
  local all = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  if #all == 0 then return 0, nil end
  local by, ask, dead = {}, {}, {}
  for i = 1, #all, 2 do
    local s = tonumber(all[i + 1])
    if s == 0 and deadlines then ask[#ask + 1] = all[i] else by[all[i]] = s end
  end
  if #ask > 0 then
    local d = deadlines(ask)
    for i, m in ipairs(ask) do by[m] = d[i] or 0 end
  end
  local n, first = 0, nil
  for m, d in pairs(by) do
    if d > now then
      n = n + 1
      if not first or d < first then first = d end
    else
      dead[#dead + 1] = m
    end
  end
  for i = 1, #dead, 1000 do
    redis.call('ZREM', key, unpack(dead, i, math.min(i + 999, #dead)))
  end
  return n, first
end

-- sl_take gives holders (a list) a slot each in semaphore key, each until
-- deadline (ms; 0: as long as deadlines says, sl_live), the caller having
-- counted room for them (sl_live). The key lives until keep ms from now
-- at least, its latest slot's lapse: a semaphore nobody holds costs no
-- memory (keep nil: the caller sets the key's life).
local function sl_take(key, holders, deadline, keep)
  if #holders == 0 then return end
  local add = {}
  for _, h in ipairs(holders) do
    add[#add + 1] = string.format('%d', deadline)
    add[#add + 1] = h
  end
  redis.call('ZADD', key, unpack(add))
  if keep and redis.call('PTTL', key) < keep then redis.call('PEXPIRE', key, string.format('%d', keep)) end
end

-- sl_free ends holders' slots in semaphore key (those it does not hold
-- are ignored), and returns how many it ended.
local function sl_free(key, holders)
  if #holders == 0 then return 0 end
  return redis.call('ZREM', key, unpack(holders))
end
