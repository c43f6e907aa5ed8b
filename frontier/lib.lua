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

-- fr_push queues an entry on its host's queue (front: before the host's
-- new URLs) and makes the host known to the scheduler of pops.
local function fr_push(items, ready, stats, entry, front, now)
  local host, json = fr_split(entry)
  local seq = redis.call('HINCRBY', stats, 'seq', 1)
  local class = '1'
  if front then class = '0' end
  redis.call('ZADD', items, 0, host .. '\0' .. class .. string.format('%016d', seq) .. '\0' .. json)
  redis.call('ZADD', ready, 'NX', now, host)
end
