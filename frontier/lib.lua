-- lib.lua: helpers every frontier script starts with.
--
-- The queue is per host, so that a pop never hands out a URL whose host is
-- not due yet (no deferral churn on busy hosts), yet every key is declared:
--   items  one sorted set, all scores 0, ordered by member:
--          host \0 class seq \0 item-json
--          (class '0' = back at the front of its host's queue, '1' = new;
--          seq a 16-digit counter), so ZRANGEBYLEX [host\0 (host\1 is the
--          host's own FIFO queue;
--   ready  sorted set host -> the earliest time (ms, server clock) the next
--          URL of that host may be popped.
-- An entry outside the queue (in flight, deferred) is "host\nitem-json".

local function fr_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function fr_split(entry)
  local i = string.find(entry, '\n', 1, true)
  return string.sub(entry, 1, i - 1), string.sub(entry, i + 1)
end

-- fr_push_many queues entries on their hosts' queues (front: before the
-- hosts' new URLs) and makes the hosts known to the scheduler of pops, in
-- three commands however many entries: inside a script each redis.call
-- costs about as much as the work it does, so per-entry calls would be a
-- large share of a page's Redis CPU (bench/README.md).
-- When the queue was empty, a message on the channel items..':wake' tells
-- idle workers (subscribed, instead of polling) that there is work again.
local function fr_push_many(items, ready, stats, entries, front, now)
  local n = #entries
  if n == 0 then return end
  local was_empty = redis.call('EXISTS', items) == 0
  local last = redis.call('HINCRBY', stats, 'seq', n)
  local class = '1'
  if front then class = '0' end
  local members, hosts = {}, {}
  local t = tostring(now)
  for i, e in ipairs(entries) do
    local host, json = fr_split(e)
    members[2 * i - 1] = '0'
    members[2 * i] = host .. '\0' .. class .. string.format('%016d', last - n + i) .. '\0' .. json
    hosts[2 * i - 1] = t
    hosts[2 * i] = host
  end
  redis.call('ZADD', items, unpack(members))
  redis.call('ZADD', ready, 'NX', unpack(hosts))
  if was_empty then redis.call('PUBLISH', items .. ':wake', '1') end
end

local function fr_push(items, ready, stats, entry, front, now)
  fr_push_many(items, ready, stats, {entry}, front, now)
end
