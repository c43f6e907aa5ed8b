-- requires: queue
-- push.lua: URLs into their hosts' queues (queue.lua's format), grouped
-- under their parents' markers, and their hosts into the ready set with
-- them: the lists a push gathers, and the push at the front (a URL given
-- back, a retry due); pushback.lua pushes at the back (new links, seeds).

-- fr_group is the list of host's elements of level (lists[lk]) that a
-- push gathers, made when new; levels[host] notes the levels it made,
-- once the host has one other than 0 (nil until then: a table a host only
-- for a crawl with priorities).
local function fr_group(lists, levels, host, level, lk)
  local l = lists[lk]
  if l then return l end
  l = {}
  lists[lk] = l
  local lv = levels[host]
  if level ~= 0 and not lv then
    lv = {}
    if lists[host] then lv[1] = 0 end
    levels[host] = lv
  end
  if lv then lv[#lv + 1] = level end
  return l
end

-- fr_push_list queues the elements l at the back of list key, in order,
-- or with Q.lifo at its front, in order.
local function fr_push_list(Q, key, l)
  if not Q.lifo then
    redis.call('RPUSH', key, unpack(l))
    return
  end
  local rev = {}
  for k = #l, 1, -1 do rev[#rev + 1] = l[k] end
  redis.call('LPUSH', key, unpack(rev))
end

-- fr_push_group pushes the elements l onto list queues .. lk (a host, or
-- "host level"): as fr_push_list does, or with front at its front as
-- they are (gathered last first); it returns how many.
local function fr_push_group(Q, lk, l, front)
  if front then redis.call('LPUSH', Q.queues .. lk, unpack(l)) else fr_push_list(Q, Q.queues .. lk, l) end
  return #l
end

-- fr_push_groups pushes the lists a push gathered for host (fr_group),
-- each onto its level's list: as fr_push_list does, or with front at the
-- front as they are (gathered last first). It notes the host's new levels
-- and returns how many elements it pushed.
local function fr_push_groups(Q, host, lists, levels, front)
  local lv = levels[host]
  if not lv then return fr_push_group(Q, host, lists[host], front) end
  local added, n = {}, 0
  for _, level in ipairs(lv) do
    local lk = host
    if level ~= 0 then
      lk = host .. ' ' .. level
      added[level] = true
    end
    n = n + fr_push_group(Q, lk, lists[lk], front)
  end
  fr_add_levels(Q, host, added)
  return n
end

-- fr_push_front puts entries "host\nitem-json" back at the front of their
-- hosts' queues, in order (the first entry of a host ends up first).
local function fr_push_front(Q, entries, now)
  if #entries == 0 then return end
  local lists, order, levels, met = {}, {}, {}, {} -- lists and levels as fr_push_back's
  for k = #entries, 1, -1 do
    local host, json = fr_split(entries[k])
    local level, lk = fr_level(json), host
    if level ~= 0 then lk = host .. ' ' .. level end
    if not met[host] then
      met[host] = true
      order[#order + 1] = host
    end
    local l = fr_group(lists, levels, host, level, lk)
    l[#l + 1] = json
  end
  for _, host in ipairs(order) do
    redis.call('HINCRBY', Q.lengths, host, fr_int(fr_push_groups(Q, host, lists, levels, true)))
  end
  fr_ready(Q, order, now)
  fr_count(Q, #entries)
end
