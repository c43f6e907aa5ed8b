-- requires: push
-- pushback.lua: new links and seeds queued at the back of their hosts'
-- queues (push.lua's lists), those of blocked hosts dropped.

-- fr_push_back queues entries "host\nparent\nelement" at the back of their
-- hosts' queues, a marker before each run of compact elements of a new
-- parent: one RPUSH a host, however many entries (inside a script each
-- redis.call costs about as much as the work it does; bench/README.md).
-- With Q.hostrules, the entries of blocked hosts (crawler host --block)
-- are dropped, counted in stats as skipped_links:blocked. It returns how
-- many it queued.
local function fr_push_back(Q, entries, now)
  if #entries == 0 then return 0 end
  -- lists: list key's suffix (host, or "host level") -> its elements;
  -- levels: host -> the levels it got, only once it got one other than 0
  -- (nil: level 0 alone, nearly always: no table a host).
  local lists, order, last, n, levels = {}, {}, {}, {}, {}
  for _, e in ipairs(entries) do
    local i = string.find(e, '\n', 1, true)
    local j = string.find(e, '\n', i + 1, true)
    local host, parent, el = string.sub(e, 1, i - 1), string.sub(e, i + 1, j - 1), string.sub(e, j + 1)
    local level, lk = 0, host
    local sp = string.find(host, ' ', 1, true)
    if sp then -- "host level": a compact element of that level's list
      level, host = tonumber(string.sub(host, sp + 1)) or 0, string.sub(host, 1, sp - 1)
    elseif string.byte(el, 1) == FR_JSON then
      level = fr_level(el)
    end
    if level ~= 0 then lk = host .. ' ' .. level end
    if not n[host] then
      order[#order + 1] = host
      n[host] = 0
    end
    local l = fr_group(lists, levels, host, level, lk)
    n[host] = n[host] + 1
    if string.byte(el, 1) ~= FR_JSON and last[lk] ~= parent then
      l[#l + 1] = 'P' .. parent
      last[lk] = parent
    end
    l[#l + 1] = el
  end
  local queued = #entries
  if Q.hostrules and redis.call('EXISTS', Q.hostrules) == 1 then
    local rules, kept, dropped = redis.call('HMGET', Q.hostrules, unpack(order)), {}, 0
    for i, host in ipairs(order) do
      if fr_blocked(rules[i]) then dropped = dropped + n[host] else kept[#kept + 1] = host end
    end
    if dropped > 0 then
      redis.call('HINCRBY', Q.stats, 'skipped_links:blocked', fr_int(dropped))
      order, queued = kept, queued - dropped
    end
  end
  for _, host in ipairs(order) do
    fr_push_groups(Q, host, lists, levels, false)
    redis.call('HINCRBY', Q.lengths, host, fr_int(n[host]))
  end
  fr_ready(Q, order, now)
  if queued > 0 then fr_count(Q, queued) end
  return queued
end
