-- requires: contract keys tokens
-- exchange_guard.lua: an exchange (exchange.lua) let through or refused
-- before any write, and what its steps share: one table, the exchange X,
-- with its keys by name (X.K), its arguments (X.A, exchange.go's
-- exchangeArgs) and what the steps leave for those after them.

local EX = {} -- the exchange, made by ex_guard

-- ex_text is the exchange's text n (1-based: a field marked "text").
local function ex_text(X, n) return ARGV[X.T + n] end

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
  -- Every field the steps set, in one constructor: the table is sized once.
  EX = {K = K, A = A, T = link0 + links, link0 = link0, links = links, reply = false, Q = false,
    now = 0, nowus = 0, rate = 0, burst = 1, bump = false, refunds = false, answer = false, parked = false,
    acked = 0, got = false, pages = 0, done = 0, wait = 0, W = 0, budget = 0, limited = false, queued = false,
    delays = false, firsts = false, slots = false, froms = false, untils = false, tokened = false, least = 0,
    tnow = 0, horizon = 0, reach = 0, anySlowed = false, anyCapped = false, marks = false, visited = false,
    readyAdd = false, refillAdd = false, taken = 0, paused = false, rules = false, rates = false, kept = false,
    again = false, settings = 0, stale = false, ip = false, ipk = false, ipS = 1, ipShard = 0, aT = 0, aEarly = 0,
    aWidth = 0, addrOf = false, atat = false, adirty = false, resolve = false, arefunds = false, addrOut = false}
  if not fr_ours(K.config, A.instance) then return 'gone' end
  local why = ex_unsound(K, A.expect == 0)
  if why then return why end
  local held = tonumber(redis.call('GET', K.counter) or '0')
  if held ~= A.expect then return held end
end

-- ex_begin counts the call as one more of the process's exchanges (the
-- batch's last call does) and sets out what the steps share.
local function ex_begin(reply)
  local X, K, A = EX, EX.K, EX.A
  if A.count then
    redis.call('INCR', K.counter)
    redis.call('PEXPIRE', K.counter, '86400000') -- a day: a process silent longer only forgets once more
  end
  X.reply = reply
  X.Q = fr_keys(K.queues, K.ready, K.stats, K.lengths, K.refill, K.hostrules)
  X.pready = fr_ready_of(X.Q, X.A.lane) -- the pops' lane's ready set (lane: 'render' for a worker with a browser)
  X.Q.lifo = A.lifo == true
  X.Q.failed = K.failed -- a queue's elements not well formed go there (fr_set_aside)
  X.now, X.nowus = fr_now(), tb_now()
  X.rate, X.burst = A.rate or 0, A.burst or 1
  -- The settings version in force here ('crawler set', settings.lua): a
  -- caller on older settings pops nothing (ex_again, ex_pop), and learns
  -- the version from the reply, so that no URL is handed out under
  -- settings older than the shard's.
  X.settings = tonumber(redis.call('GET', K.settings) or '0') or 0
  X.stale = (A.settings or 0) < X.settings
  X.bump = {}    -- stats field -> increment, written once each (ex_write_stats)
  X.refunds = {} -- host -> the slots of its tokens that made no request (ex_refund)
  X.arefunds = {} -- address -> the same, for tokens of an address's bucket too (addrs.lua)
  X.answer = {}  -- a digit a finished lease (the reply's held)
  X.parked = {}  -- records that wait in this call's outbox entry: {d, r, n}
  X.acked = 0
  X.got = {}     -- popped: host, json, host, json, ...
  X.pages, X.done, X.wait = 0, 0, 0
  return X
end

-- ex_add adds by to the stats field, written once at the end.
local function ex_add(X, field, by) X.bump[field] = (X.bump[field] or 0) + by end
