-- requires: contract keys hostbucket
-- exchange_guard.lua: an exchange (exchange.lua, then handout.lua) let
-- through or refused before any write, and the call its steps read: C
-- (ex_call), its keys by name (C.K), its arguments (C.A, exchange.go's
-- exchangeArgs), its clock, never written after it is made. What a step
-- leaves for another it returns.

local EX = {} -- the call's keys and arguments, decoded by ex_guard

-- ex_text is the exchange's text n (1-based: a field marked "text").
local function ex_text(C, n) return ARGV[C.T + n] end

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
    {'HSET', K.outbox, 'x', 'x'}, {'ZADD', K.due, '1', 'x'},
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

-- ex_call is the call C its steps read, for keys K (by name) and
-- arguments A whose texts follow ARGV[T]: the queues' keys, Redis's clock
-- (now, ms; nowus, µs), the crawl's rate and burst, and the settings
-- version in force. Both of an exchange's scripts make it.
local function ex_call(K, A, T)
  local C = {K = K, A = A, T = T}
  C.Q = fr_keys(K.queues, K.ready, K.stats, K.lengths, K.refill, K.hostrules)
  C.pready = fr_ready_of(C.Q, A.lane) -- the pops' lane's ready set (lane: 'render' for a worker with a browser)
  C.Q.lifo = A.lifo == true
  C.Q.failed = K.failed -- a queue's elements not well formed go there (fr_set_aside)
  C.now, C.nowus = fr_now(), tb_now()
  C.rate, C.burst = A.rate or 0, A.burst or 1
  -- The settings version in force here ('crawler set', settings.lua): a
  -- caller on older settings pops nothing (ex_again, ex_pop), and learns
  -- the version from the reply, so that no URL is handed out under
  -- settings older than the shard's.
  C.settings = tonumber(redis.call('GET', K.settings) or '0') or 0
  C.stale = (A.settings or 0) < C.settings
  return C
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

-- ex_clock is the call's token clock (hostbucket.lua's hb_clock): the
-- late URLs' new tokens and the pop's are taken by it, their slots
-- counting from the call's nowus.
local function ex_clock(C)
  return hb_clock(C.K, C.rate, C.burst, C.A.least_ms or 0, C.nowus, C.A.ahead_ms or 0)
end

-- ex_add adds by to the stats field in stats, the counters a call bumps,
-- written once at its end (ex_write_stats).
local function ex_add(stats, field, by) stats[field] = (stats[field] or 0) + by end
