-- requires: queue
-- pop.lua: URLs out of a host's queue (queue.lua's format), its highest
-- level first, elements that are not well formed set aside; and a blocked
-- host's queue ended with records.

-- fr_list_pop takes up to q URLs off the front of host's list key and
-- appends host, item-json for each to out, and the elements not well
-- formed to bad. Returns how many it took, and whether the list ran dry
-- (it is then gone).
local function fr_list_pop(key, host, q, out, bad, level)
  local parent, mark -- the last marker passed: its parent, and itself
  local rest = {}    -- elements popped past the q-th URL, to go back
  -- Two more than wanted: the head is usually a marker, and the element
  -- after the last URL taken says whether the new head needs one.
  local got, need, dry = 0, q + 2, false
  while true do
    local els = redis.call('LPOP', key, fr_int(need))
    if not els then
      dry = true
      break
    end
    for _, el in ipairs(els) do
      if got >= q then
        rest[#rest + 1] = el
      elseif string.byte(el, 1) == FR_MARK then
        parent, mark = string.sub(el, 2), el
      elseif not fr_wellformed(el) then
        bad[#bad + 1] = el
      else
        got = got + 1
        out[#out + 1] = host
        out[#out + 1] = fr_json(host, el, parent, level)
      end
    end
    if #els < need then
      dry = true
      break
    end
    if got >= q then break end
    need = q - got + 2
  end
  if #rest > 0 then
    -- What was popped past the last URL goes back in order, behind the
    -- marker its first element needs (none for a marker of its own), in
    -- one LPUSH: so the head never holds a marker made stale by another.
    local back, b = {}, string.byte(rest[1], 1)
    for i = #rest, 1, -1 do back[#back + 1] = rest[i] end
    if mark and b ~= FR_MARK then back[#back + 1] = mark end
    redis.call('LPUSH', key, unpack(back))
    dry = false
  elseif not dry then
    -- The queue may go on: its head gets back the marker of the compact
    -- elements after it (LPUSHX: not onto a queue LPOP emptied, and so
    -- deleted).
    if mark then
      dry = redis.call('LPUSHX', key, mark) == 0
    else
      dry = redis.call('EXISTS', key) == 0
    end
  end
  return got, dry
end

-- fr_pop takes up to q URLs off the front of host's queue, its highest
-- level first, and appends host, item-json for each to out. Returns how
-- many it took, and whether the queue ran dry (its lists are then gone).
-- The caller counts them off the total (fr_count), once for all its pops;
-- a queue run dry settles the rest of its length here.
local function fr_pop(Q, host, q, out)
  local bad, got, dry = {}, 0, true
  if Q.anyLevels == nil then Q.anyLevels = redis.call('EXISTS', Q.levels) == 1 end
  local order, levels
  if Q.anyLevels then order, levels = fr_level_order(Q, host) end
  if not levels or #levels == 0 then -- level 0 alone: the crawl's every host, without priorities
    got, dry = fr_list_pop(Q.queues .. host, host, q, out, bad)
  else
    local left, zeroDry = {}, nil
    for _, level in ipairs(order) do
      local g, d = 0, false
      if got < q then
        g, d = fr_list_pop(fr_qkey(Q, host, level), host, q - got, out, bad, level)
        got = got + g
      end
      if level == 0 then
        zeroDry = d
        if got >= q and g == 0 and not d then zeroDry = redis.call('EXISTS', Q.queues .. host) == 0 end
      elseif not d then
        left[#left + 1] = level
      end
    end
    if #left ~= #levels then fr_set_levels(Q, host, left) end
    dry = #left == 0 and zeroDry
  end
  fr_set_aside(Q, host, bad)
  if dry then
    -- What the host's length counted past the URLs taken was counted in the
    -- total too, and is no URL (an element corrupted in place, set aside):
    -- it comes off the total here, the URLs taken by the caller.
    local counted = tonumber(redis.call('HGET', Q.lengths, host) or '0') or 0
    if counted > got then fr_count(Q, got - counted) end
    redis.call('HDEL', Q.lengths, host)
  elseif got > 0 then
    redis.call('HINCRBY', Q.lengths, host, fr_int(-got))
  end
  return got, dry
end

-- fr_drop_blocked ends up to q of blocked host's queued URLs, each with a
-- record (outcome skipped, its error why: fr_blocked) in the results stream
-- (capped at cap, XADD MAXLEN ~), counted in stats (skipped, records) and
-- no longer queued. It returns how many, and whether the queue is now
-- empty.
local function fr_drop_blocked(Q, host, results, cap, q, why)
  local got = {}
  local n, dry = fr_pop(Q, host, q, got)
  for i = 2, #got, 2 do
    fr_end_record(results, cap, cjson.decode(got[i]), 'skipped', why or FR_BLOCKED_WHY)
  end
  if n > 0 then
    redis.call('HINCRBY', Q.stats, 'skipped', fr_int(n))
    redis.call('HINCRBY', Q.stats, 'records', fr_int(n))
    fr_count(Q, -n)
  end
  return n, dry
end
