-- requires: contract push
-- schedule_steps.lua: the steps of the scheduler's sweep that put due work
-- back in the queues (schedule.lua), and the sweep's call S, which both of
-- its scripts make (sc_begin): its keys and arguments by name (S.K, S.A),
-- Redis's clock, the settings in force, and the records the sweep writes
-- (S.written, the one field a step adds to). What a step finds for
-- another it returns.

-- sc_begin names the keys and arguments, and refuses the sweep before any
-- write (the error's text, nil: none) when the crawl is gone, a number the
-- crawl's end rests on is unsound, or Redis's user may not run a command
-- the sweep may run.
local function sc_begin()
  local K = {}
  for i, name in ipairs(SC_KEYS) do K[name] = KEYS[i + 1] end
  local A = cjson.decode(ARGV[2]) -- scheduleArgs, by name
  A.epoch, A.settings = ARGV[1], A.settings or 0
  if not fr_ours(K.config, A.instance) then return nil, FR_GONE end
  local q = K.queues .. 'x' -- a queue: the queues share their prefix
  local why = fr_unsound_stats(K.stats) or fr_denied({
    {'XADD', K.sweeps, '*', 'x', 'x'}, {'XADD', K.results, '*', 'x', 'x'}, {'HINCRBY', K.stats, 'x', '1'},
    {'HSET', K.stats, 'x', '1'}, {'ZREM', K.leases, 'x'}, {'ZREM', K.deferred, 'x'}, {'ZADD', K.ready, '1', 'x'},
    {'LPUSH', K.failed, 'x'}, {'LTRIM', K.failed, '0', '1'}, {'LPUSH', q, 'x'}, {'LPOP', q, '1'}, {'DEL', q},
    {'HDEL', K.lengths, 'x'}, {'SET', K.done, '1'}, {'PUBLISH', K.queues .. 'wake', '1'},
  })
  if why then return nil, why end
  local S = {K = K, A = A, now = fr_now(), Q = fr_keys(K.queues, K.ready, K.stats, K.lengths, K.refill)}
  S.Q.failed = K.failed -- what is not well formed goes there (fr_set_aside)
  S.written = {} -- the records this sweep adds to the results stream, for the scheduler's own --out
  -- The settings version in force here ('crawler set'): a scheduler on
  -- older settings (a page budget since raised) ends no crawl (sc_end).
  S.settings = tonumber(redis.call('GET', K.settings) or '0') or 0
  S.oldSettings = S.A.settings < S.settings
  return S
end

-- sc_swept adds a record for a URL the sweep ends (frontier.SweptRecord).
local function sc_swept(S, item, err)
  S.written[#S.written + 1] = fr_end_record(S.K.results, tonumber(S.A.results_cap), item, 'failed', err)
  redis.call('HINCRBY', S.K.stats, 'records', 1)
end

-- 1. sc_budget reads the page budget (-1: this shard's share, stats'
-- allow) and what it leaves room for: {limited, budget, pages, spent,
-- room}. A retry goes back to the queue only while the budget has room
-- for it beyond the URLs in flight (each may still become a page).
-- Otherwise it stays deferred: fetched later if room opens, or ended with
-- its failed record once the budget is spent (schedule_end.lua's
-- sc_last_records), never left queued without one. Room is at most the
-- sweep's limit.
local function sc_budget(S)
  local K, budget = S.K, S.A.budget
  local B = {limited = budget ~= 0}
  if budget < 0 then budget = tonumber(redis.call('HGET', K.stats, 'allow') or '0') end
  B.budget = budget
  B.pages = tonumber(redis.call('HGET', K.stats, 'pages') or '0')
  B.spent = B.limited and B.pages >= budget
  B.room = S.A.limit
  if B.limited then B.room = math.min(S.A.limit, budget - B.pages - redis.call('ZCARD', K.leases)) end
  return B
end

-- 2. sc_release: due deferred entries, at most room, go back to the front
-- of their hosts' queues; it returns how many.
local function sc_release(S, room)
  if room <= 0 then return 0 end
  local due = redis.call('ZRANGEBYSCORE', S.K.deferred, '-inf', S.now, 'LIMIT', 0, room)
  if #due > 0 then
    redis.call('ZREM', S.K.deferred, unpack(due))
    fr_push_front(S.Q, due, S.now)
  end
  return #due
end

-- sc_revisit_entry is a due member ("host\nelement\nvisit") as a queue
-- entry for the front of its host's queue: an item that carries its visit
-- (Item.V); a member not well formed is set aside, and nil returned.
local function sc_revisit_entry(S, member)
  local i = string.find(member, '\n', 1, true)
  local j = i and string.find(member, '\n', i + 1, true)
  local host, el, visit
  if j then host, el, visit = string.sub(member, 1, i - 1), string.sub(member, i + 1, j - 1), string.sub(member, j + 1) end
  if j and el ~= '' and string.byte(el, 1) ~= FR_MARK and fr_wellformed(el) then
    local item = fr_json(host, el, nil)
    return host .. '\n' .. string.sub(item, 1, -2) .. ',"v":' .. cjson.encode(visit) .. '}'
  end
  fr_set_aside(S.Q, host or '?', {member})
  return nil
end

-- sc_cutoff is the time (ms) by which a revisit is due (nil: none is):
-- now in a continuous crawl, and a recrawl's time (stats' recrawl_at,
-- recrawl.lua), whichever is later.
local function sc_cutoff(S)
  local cutoff
  if S.A.continuous then cutoff = S.now end
  local recrawl = tonumber(redis.call('HGET', S.K.stats, 'recrawl_at') or '')
  if recrawl and (not cutoff or recrawl > cutoff) then cutoff = recrawl end
  return cutoff
end

-- 3. sc_revisits: the URLs due for a revisit (sc_cutoff), at most room, go
-- to the front of their hosts' queues, and off the due set until the
-- exchange that ends their fetch puts them back on it; it returns how
-- many.
local function sc_revisits(S, room)
  local K, cutoff = S.K, sc_cutoff(S)
  if not cutoff or room <= 0 then return 0 end
  local urls = redis.call('ZRANGEBYSCORE', K.due, '-inf', cutoff, 'LIMIT', 0, room)
  if #urls == 0 then return 0 end
  local entries = {}
  for _, member in ipairs(urls) do
    entries[#entries + 1] = sc_revisit_entry(S, member)
  end
  redis.call('ZREM', K.due, unpack(urls))
  fr_push_front(S.Q, entries, S.now)
  return #entries
end

-- 4. sc_reclaim: entries whose lease expired go back to the front of
-- their hosts' queues with attempts+1, or to the failed list, with a
-- record, past the maximum attempts; it returns how many of each.
local function sc_reclaim(S)
  local K, A = S.K, S.A
  local reclaimed, failed = 0, 0
  local expired = redis.call('ZRANGEBYSCORE', K.leases, '-inf', S.now, 'LIMIT', 0, A.limit)
  if #expired > 0 then redis.call('ZREM', K.leases, unpack(expired)) end
  local back = {}
  for _, lease in ipairs(expired) do
    local _, entry = fr_split(lease) -- "id\nhost\nitem-json"
    local host, json = fr_split(entry)
    local ok, item = pcall(cjson.decode, json)
    if not ok or type(item) ~= 'table' then
      -- Not ours to read: park it with the reason, rather than fail every sweep.
      item = {u = json, a = A.max_attempts}
    end
    item.a = (item.a or 0) + 1
    if type(item.e) ~= 'table' then item.e = {} end
    item.e[#item.e + 1] = 'lease expired (worker died or hung)'
    if item.a >= A.max_attempts then
      item.err = 'lease expired ' .. item.a .. ' times (worker died or hung)'
      redis.call('LPUSH', K.failed, cjson.encode(item))
      redis.call('LTRIM', K.failed, 0, A.failed_cap - 1)
      redis.call('HINCRBY', K.stats, 'failed', 1)
      if item.u then sc_swept(S, item, item.err) end -- its fetches (by workers that died) end with a record
      failed = failed + 1
    else
      back[#back + 1] = host .. '\n' .. cjson.encode(item)
      reclaimed = reclaimed + 1
    end
  end
  fr_push_front(S.Q, back, S.now)
  return reclaimed, failed
end
