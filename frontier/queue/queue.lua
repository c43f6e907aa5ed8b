-- requires: keys
-- queue.lua: the hosts' queues, and the ready set that schedules them.
--
-- Each host has its own queue, a list under the crawl's hash tag:
--   queues .. host   (queues is the declared key "crawl:{NAME}:queue:",
--                     a prefix; every queue shares its slot, so a script
--                     may build their names, as BullMQ builds its job keys)
-- holding compact elements, oldest first:
--   's' depth ' ' rest   the URL https://HOST .. rest, whose parent is the
--   'h' depth ' ' rest   last marker before it (http://HOST .. rest)
--   'P' parent           a marker: the parent of the compact elements after it
--   '{' ...              an item's whole JSON (retries, sitemaps, the rest)
-- so the host, the scheme and a parent shared by a page's links are stored
-- once, not per URL. A pop that takes compact elements puts their marker
-- back at the head, so a compact element always has one before it.
-- A URL of another priority than 0 (frontier.Item.Priority: -9 to 9)
-- waits in its host's list of that level,
--   queues .. host .. ' ' .. level   (no host holds a space)
-- compact as at level 0 (its entry names the level after the host:
-- "host level\nparent\nelement"; the pop adds it to the item as "pr"),
-- or as item JSON that says it ("pr").
-- and the hash queues .. ' levels' says which levels other than 0 a host
-- has URLs in ("5 2 -3", highest first; absent: none). A host's URLs are
-- popped from its highest level down, level 0 among them; a crawl without
-- priorities reads nothing more than whether that hash exists.
-- With Q.lifo (seed --order depth) new URLs go to the front of their
-- list instead of the back: each host's queue is then a stack, and the
-- crawl goes depth-first within a host.
--   ready  sorted set: the hosts with URLs queued -> their token bucket's
--          tat (ms to the µs, server clock; politeness/tokens.lua): when the bucket
--          is full again, with a burst of 1 when the next URL may be popped.
--   refill sorted set: hosts whose queue ran dry while their bucket was
--          still filling -> that bucket's tat. A URL queued for such a host
--          brings it back to ready with it; a host in neither has a full
--          bucket (ready's score now).
--   lanes  hash queues .. ' lanes': host -> 'render' for a host whose pages
--          need a browser (seed --render, crawl/render.go), 'plain' for one
--          that does not; field '*' the lane of a host not in it (absent:
--          plain). A host of the render lane waits in ready .. ' render'
--          instead of ready, so that only the pops of workers with a
--          browser (exchange.lua's lane) see it, and its tat, its
--          politeness, is the same one number whichever lane it is in.
--   stats  field 'queued': the number of URLs in all the queues;
--   lengths  hash host -> the number of URLs in its queue (not markers).
-- The helpers below take these five keys as one table Q (fr_keys).
-- An entry outside the queues (in flight, deferred) is "host\nitem-json".

local FR_MARK, FR_JSON, FR_HTTPS = 80, 123, 115 -- 'P', '{', 's'


-- fr_level is the priority of a queue element: its item JSON's "pr" (a
-- compact element or a marker: 0).
local function fr_level(el)
  if string.byte(el, 1) ~= 123 then return 0 end -- '{'
  local pr = string.match(el, '"pr":(%-?%d+)')
  return tonumber(pr) or 0
end

-- fr_qkey is the key of host's list of the given level.
local function fr_qkey(Q, host, level)
  if level == 0 then return Q.queues .. host end
  return Q.queues .. host .. ' ' .. level
end

-- fr_levels are the levels other than 0 host has URLs in, highest first
-- (read once a call whether any host has any).
local function fr_levels(Q, host)
  if Q.anyLevels == nil then Q.anyLevels = redis.call('EXISTS', Q.levels) == 1 end
  if not Q.anyLevels then return {} end
  local out = {}
  for l in string.gmatch(redis.call('HGET', Q.levels, host) or '', '%S+') do out[#out + 1] = tonumber(l) end
  return out
end

-- fr_set_levels writes host's levels other than 0 (any order).
local function fr_set_levels(Q, host, levels)
  if #levels == 0 then
    redis.call('HDEL', Q.levels, host)
    return
  end
  table.sort(levels, function(a, b) return a > b end)
  redis.call('HSET', Q.levels, host, table.concat(levels, ' '))
  Q.anyLevels = true
end

-- fr_add_levels adds the levels in set (level -> true) to host's.
local function fr_add_levels(Q, host, set)
  local have, changed = fr_levels(Q, host), false
  for _, l in ipairs(have) do set[l] = nil end
  for l in pairs(set) do
    have[#have + 1] = l
    changed = true
  end
  if changed then fr_set_levels(Q, host, have) end
end

-- fr_level_order is the order host's lists are popped in: its levels
-- above 0, then 0, then those below.
local function fr_level_order(Q, host)
  local levels, order, zero = fr_levels(Q, host), {}, false
  for _, l in ipairs(levels) do
    if l < 0 and not zero then
      order[#order + 1] = 0
      zero = true
    end
    order[#order + 1] = l
  end
  if not zero then order[#order + 1] = 0 end
  return order, levels
end

-- fr_wellformed: el is an element a queue may hold (a marker, an item's
-- JSON, or a compact element); anything else was put there by hand or by
-- a bug, and is set aside (fr_set_aside), never decoded.
local function fr_wellformed(el)
  local b = string.byte(el, 1)
  if b == FR_MARK or b == FR_JSON then return true end
  return string.find(el, '^[hs]%d+ ') ~= nil
end

-- fr_set_aside puts the elements of host's queue that are not well formed
-- on the failed list (when Q.failed is given), each as an item whose error
-- names the queue and holds the element (its first 256 bytes), and counts
-- them (stats 'corrupt'): the crawl goes on, and what was there can be
-- read and requeued by hand.
local function fr_set_aside(Q, host, els)
  if #els == 0 then return end
  if Q.failed then
    local entries = {}
    for i, el in ipairs(els) do
      entries[i] = cjson.encode({u = 'http://' .. host .. '/', d = 0,
        err = 'corrupt element of ' .. Q.queues .. host .. ' set aside: ' .. string.sub(el, 1, 256)})
    end
    redis.call('LPUSH', Q.failed, unpack(entries))
  end
  redis.call('HINCRBY', Q.stats, 'corrupt', fr_int(#els))
end

-- fr_json is a queue element (not a marker) of host as item JSON: put
-- together as text when nothing in it needs escaping (a canonical URL
-- seldom holds a backslash or a double quote), else by cjson.
local function fr_json(host, el, parent, level)
  local b = string.byte(el, 1)
  if b == FR_JSON then return el end
  local sp = string.find(el, ' ', 2, true)
  local scheme = 'http://'
  if b == FR_HTTPS then scheme = 'https://' end
  local u, d = scheme .. host .. string.sub(el, sp + 1), string.sub(el, 2, sp - 1)
  if parent == '' then parent = nil end
  local pr = ''
  if level and level ~= 0 then pr = ',"pr":' .. level end -- a compact element of a level's list
  if string.find(u, '["\\%c]') or (parent and string.find(parent, '["\\%c]')) then
    local it = {u = u, d = tonumber(d), p = parent}
    if pr ~= '' then it.pr = level end
    return cjson.encode(it)
  end
  if parent then return '{"u":"' .. u .. '","d":' .. d .. ',"p":"' .. parent .. '"' .. pr .. '}' end
  return '{"u":"' .. u .. '","d":' .. d .. pr .. '}'
end

-- fr_count adds n to the URLs queued. When the queues were empty, a
-- message on the channel queues..'wake' tells idle workers (subscribed,
-- instead of polling) that there is work again. Returns the new count.
local function fr_count(Q, n)
  local now = redis.call('HINCRBY', Q.stats, 'queued', fr_int(n))
  if n > 0 and now == n then redis.call('PUBLISH', Q.queues .. 'wake', '1') end
  return now
end

-- fr_queued is the number of URLs in all the queues.
local function fr_queued(Q)
  return tonumber(redis.call('HGET', Q.stats, 'queued') or '0')
end

-- fr_zadd_ready adds args (score, host, score, host, …) to each host's
-- ready set (fr_rkey), with flag (NX, GT, XX).
local function fr_zadd_ready(Q, flag, args)
  if #args == 0 then return end
  if Q.anyLanes == nil then Q.anyLanes = redis.call('EXISTS', Q.lanes) == 1 end
  if not Q.anyLanes then
    redis.call('ZADD', Q.ready, flag, unpack(args))
    return
  end
  local byKey = {}
  for i = 1, #args, 2 do
    local key = fr_rkey(Q, args[i + 1])
    local a = byKey[key]
    if not a then
      a = {}
      byKey[key] = a
    end
    a[#a + 1] = args[i]
    a[#a + 1] = args[i + 1]
  end
  for key, a in pairs(byKey) do redis.call('ZADD', key, flag, unpack(a)) end
end

-- fr_ready makes hosts that have URLs queued known to the scheduler of
-- pops: a host already in ready keeps its tat; one in refill comes back
-- with the tat it left with, while that is still ahead; any other has a
-- full bucket, due now.
local function fr_ready(Q, hosts, now)
  if #hosts == 0 then return end
  local args, t = {}, fr_int(now)
  local tats, back = nil, {}
  if redis.call('EXISTS', Q.refill) == 1 then tats = redis.call('ZMSCORE', Q.refill, unpack(hosts)) end
  for i, host in ipairs(hosts) do
    args[2 * i - 1] = t
    args[2 * i] = host
    if tats and tats[i] then
      if tonumber(tats[i]) > now then args[2 * i - 1] = tats[i] end
      back[#back + 1] = host
    end
  end
  fr_zadd_ready(Q, 'NX', args)
  if #back > 0 then redis.call('ZREM', Q.refill, unpack(back)) end
end

-- fr_end_record adds to the results stream (capped at cap, XADD MAXLEN ~)
-- the record of a URL ended without a page of its own: its queue item
-- (decoded), the outcome and its error (frontier.SweptRecord's shape); it
-- returns the record.
local function fr_end_record(results, cap, item, outcome, err)
  local rec = cjson.encode({url = item.u, depth = item.d or 0, parent = item.p, attempt = tonumber(item.a) or 0,
    outcome = outcome, error = err})
  redis.call('XADD', results, 'MAXLEN', '~', fr_int(cap), '*', 'rec', rec, 'new_links', '0')
  return rec
end
