-- requires: exchange_call
-- exchange_guard.lua: exchange.lua let through or refused before any
-- write, and counted (the scripts after it run only where they find that
-- count).

local EX = {} -- the call's keys and arguments, decoded by ex_guard

-- ex_unsound is why the call cannot run to its end, found before its first
-- write (nil: none): Redis does not undo a script's writes when it fails
-- half-way, and a failure after the exchange counter's INCR and the Bloom
-- filter's bits would lose the links and URLs written so far. It reads
-- the numbers the crawl's end and budget rest on (the counter, stats'
-- queued, pages, allow: a number set by hand is repaired by hand, not
-- guessed), and, at a process's first exchange, that each of its keys
-- is of its kind (or absent), and where Redis can say (7.0:
-- redis.acl_check_cmd) whether the user may run every command an
-- exchange may run, on its keys. (A key changed later, mid-crawl, fails
-- the call where it is used: the worker stops then too, ErrScript.)
local function ex_unsound(K, first)
  local n = redis.call('GET', K.counter)
  if n and not string.find(n, '^%d+$') then
    return 'CORRUPT ' .. K.counter .. ' holds ' .. string.format('%q', string.sub(n, 1, 64)) .. ', not a whole number'
  end
  local why = fr_unsound_stats(K.stats)
  if why then return why end
  if not first then return nil end
  for _, name in ipairs(EX_KEYS) do
    local kind = EX_KINDS[name]
    if kind then
      local t = redis.call('TYPE', K[name])
      if type(t) == 'table' then t = t.ok end
      if t ~= 'none' and t ~= kind then
        return 'CORRUPT ' .. K[name] .. ' is a ' .. t .. ', not a ' .. kind
      end
    end
  end
  local q = K.queues .. 'x' -- a queue: the queues share their prefix
  return fr_denied({
    {'SETRANGE', KEYS[1], '0', 'x'}, {'INCR', K.counter}, {'PEXPIRE', K.counter, '1'},
    {'HINCRBY', K.stats, 'x', '1'}, {'HSET', K.stats, 'x', '1'}, {'HDEL', K.lengths, 'x'},
    {'LPOP', q, '1'}, {'LPUSH', q, 'x'}, {'RPUSH', q, 'x'}, {'LPUSHX', q, 'x'},
    {'ZADD', K.ready, '1', 'x'}, {'ZADD', K.leases, '1', 'x'}, {'ZREM', K.leases, 'x'},
    {'LPUSH', K.failed, 'x'}, {'LTRIM', K.failed, '0', '1'},
    {'XADD', K.results, '*', 'x', 'x'}, {'SET', K.done, '1'}, {'SET', K.ended, 'x'},
    {'HSET', K.outbox, 'x', 'x'}, {'ZADD', K.due, '1', 'x'}, {'HSET', K.fresh, 'x', '1'},
    {'PUBLISH', K.queues .. 'wake', '1'},
  })
end

-- ex_guard decodes the arguments and refuses the call, before any write,
-- when the crawl is gone ('gone'), a key is unsound (its reason), or Redis
-- holds another count of the process's exchanges than the process (that
-- count): bloom_run's guard.
local function ex_guard(key0, link0, links)
  local K = {}
  for i, name in ipairs(EX_KEYS) do K[name] = KEYS[key0 + i - 1] end
  local A = cjson.decode(ARGV[link0 + links])
  EX = {K = K, A = A, T = link0 + links, link0 = link0, links = links}
  if not fr_ours(K.config, A.instance) then return 'gone' end
  local why = ex_unsound(K, A.expect == 0)
  if why then return why end
  local held = tonumber(redis.call('GET', K.counter) or '0')
  if held ~= A.expect then return held end
end

-- ex_begin counts the call as one more of the process's exchanges (the
-- batch's last call does) and makes the call C (ex_call) with the Bloom
-- filter's reply and where the links are (link0, links).
local function ex_begin(reply)
  local K, A = EX.K, EX.A
  if A.count then
    redis.call('INCR', K.counter)
    redis.call('PEXPIRE', K.counter, '86400000') -- a day: a process silent longer only forgets once more
  end
  local C = ex_call(K, A, EX.T)
  C.reply, C.link0, C.links = reply, EX.link0, EX.links
  return C
end
