-- requires: schedule_steps
-- schedule_end.lua: the sweep's end (steps 7 to 9 of schedule.lua): whether
-- the shard is empty, whether the crawl is over and its last records are
-- written, and the reply.

-- 7. sc_empty: nothing queued, leased, deferred or waiting in the outbox,
-- no sample waiting for a render worker (its links may be queued yet:
-- frontier/samples.go), and no URL due by a recrawl's time that is not
-- queued yet (work still to do); a continuous crawl is never empty.
local function sc_empty(S)
  local K = S.K
  S.dueLeft = 0
  if S.cutoff then S.dueLeft = redis.call('ZCOUNT', K.due, '-inf', S.cutoff) end
  S.empty = 0
  if not S.A.continuous and S.dueLeft == 0 and redis.call('ZCARD', K.leases) == 0 and fr_queued(S.Q) == 0
      and redis.call('ZCARD', K.deferred) == 0 and S.waiting == 0 and redis.call('ZCARD', K.samples) == 0 then
    S.empty = 1
  end
end

-- sc_last_record ends a URL that was tried and will not be tried again,
-- the page budget spent: a failed record, saying what its last try met.
local function sc_last_record(S, item)
  local last = 'a retry'
  if type(item.e) == 'table' and #item.e > 0 then last = item.e[#item.e] end
  local tried = {u = item.u, d = item.d, p = item.p, a = (tonumber(item.a) or 0) + 1}
  sc_swept(S, tried, last .. ' (not retried: the page budget is spent)')
  redis.call('HINCRBY', S.K.stats, 'failed', 1)
end

-- At the end of a budgeted crawl, a host's queue is scanned for URLs that
-- were tried before (attempts > 0): a retry or a reclaimed lease goes back
-- to the front of its host's queue as item JSON, so they are all in the
-- queue's leading run of JSON elements (at most SC_END_RUN of it is read).
-- Each gets its last record; the rest of the run stays, in order.
-- SC_END_HOSTS hosts a sweep at most; the next sweep goes on.
local SC_END_RUN, SC_END_HOSTS = 1000, 2000

-- sc_leading_run is the leading run of JSON elements of host's queue, at
-- most SC_END_RUN of them.
local function sc_leading_run(key)
  local run = {}
  while #run < SC_END_RUN do
    local els = redis.call('LRANGE', key, #run, #run + 99)
    local more = #els == 100
    for _, el in ipairs(els) do
      if string.byte(el, 1) ~= FR_JSON or #run >= SC_END_RUN then
        more = false
        break
      end
      run[#run + 1] = el
    end
    if not more then break end
  end
  return run
end

-- sc_end_tried ends the URLs tried before at the front of host's lists
-- (sc_last_record), each level's, and returns how many.
local function sc_end_tried(S, host)
  local Q = S.Q
  local order, levels = fr_level_order(Q, host)
  local n, left = 0, {}
  for _, level in ipairs(order) do
    local key = fr_qkey(Q, host, level)
    local run = sc_leading_run(key)
    local keep, ended = {}, 0
    for _, el in ipairs(run) do
      local ok, item = pcall(cjson.decode, el)
      if ok and type(item) == 'table' and item.u and (tonumber(item.a) or 0) > 0 then
        sc_last_record(S, item)
        ended = ended + 1
      else
        keep[#keep + 1] = el
      end
    end
    if ended > 0 then
      redis.call('LTRIM', key, #run, -1)
      if #keep > 0 then
        local rev = {}
        for i = #keep, 1, -1 do rev[#rev + 1] = keep[i] end
        redis.call('LPUSH', key, unpack(rev)) -- back at the front, in their order
      end
      n = n + ended
    end
    if level ~= 0 and redis.call('EXISTS', key) == 1 then left[#left + 1] = level end
  end
  if n == 0 then return 0 end
  if #left ~= #levels then fr_set_levels(Q, host, left) end
  if redis.call('HINCRBY', Q.lengths, host, -n) <= 0 then
    redis.call('HDEL', Q.lengths, host)
    redis.call('ZREM', fr_rkey(Q, host), host)
    redis.call('DEL', Q.queues .. host) -- what is left is a marker, no URL
  end
  fr_count(Q, -n)
  return n
end

-- sc_last_records: with a page budget, a URL that was tried and waits for
-- another try will never get it: each ends with a failed record, so that
-- none goes without one — those deferred (limit a sweep), and those
-- released to their host's queue (retries and reclaimed leases go to its
-- front) that no pop took before the budget ran out (a scan of the
-- queues, its cursor kept in stats' end_scan over sweeps). It reports
-- whether all are written.
local function sc_last_records(S)
  local K = S.K
  local waiting = redis.call('ZRANGE', K.deferred, 0, S.A.limit - 1)
  for _, entry in ipairs(waiting) do
    local _, json = fr_split(entry)
    local ok, item = pcall(cjson.decode, json)
    if ok and type(item) == 'table' and item.u then sc_last_record(S, item) end
  end
  if #waiting > 0 then redis.call('ZREM', K.deferred, unpack(waiting)) end
  if redis.call('ZCARD', K.deferred) ~= 0 then return false end
  local scan = redis.call('HGET', K.stats, 'end_scan') -- nil: not begun; a cursor; 'done'
  if scan == 'done' then return true end
  local cursor, hosts = scan or '0', 0
  repeat
    local r = redis.call('HSCAN', K.lengths, cursor, 'COUNT', 100)
    cursor = r[1]
    for i = 1, #r[2], 2 do
      sc_end_tried(S, r[2][i])
      hosts = hosts + 1
    end
  until cursor == '0' or hosts >= SC_END_HOSTS
  if cursor == '0' then
    redis.call('HSET', K.stats, 'end_scan', 'done')
    return true
  end
  redis.call('HSET', K.stats, 'end_scan', cursor)
  return false
end

-- 8. sc_end decides whether the crawl is over (S.done) and whether its
-- last records are still being written (S.ending). Mode '0', a shard of
-- several, only reads its flag; '1', the crawl's only shard, ends it when
-- nothing is queued, in flight, deferred or due (or the budget is spent
-- with nothing in flight), a continuous crawl never; 'end' and 'finish',
-- Frontier.Schedule decided it is over. The done flag is set only once
-- every last record is written, so the workers, which stop at the flag,
-- see every record; 'finish' writes them without setting it (done 1:
-- ready to end; Frontier.Schedule sets the flags once every shard is).
local function sc_end(S)
  local K, mode = S.K, S.A.mode
  S.done, S.ending = 0, false
  if mode == '0' then
    S.done = redis.call('EXISTS', K.done)
    return
  end
  if redis.call('EXISTS', K.done) == 1 then
    S.done = 1
    return
  end
  if S.oldSettings then return end -- its budget may be another now: the next sweep decides
  if mode == '1' then
    if S.A.continuous then return end
    local idle = fr_queued(S.Q) == 0 and redis.call('ZCARD', K.deferred) == 0 and S.dueLeft == 0
      and redis.call('ZCARD', K.samples) == 0
    if redis.call('ZCARD', K.leases) ~= 0 or not (idle or S.spent) then return end
  end
  if S.limited and not sc_last_records(S) then
    S.ending = true
  elseif mode == 'finish' then
    S.done = 1
  else
    -- The first time: wake the idle workers (they poll about once a second
    -- otherwise), so that they learn at once that the crawl is over.
    if redis.call('SET', K.done, '1', 'NX') then redis.call('PUBLISH', K.queues .. 'wake', 'done') end
    S.done = 1
  end
end

-- 9. sc_reply: the sweep's report (schedule.lua's header), with when the
-- next deferred item or revisit is due, so that the scheduler sweeps again
-- then rather than polling often.
local function sc_reply(S)
  local K = S.K
  local nxt = redis.call('ZRANGE', K.deferred, 0, 0, 'WITHSCORES')
  local dueIn = -1
  if #nxt == 2 then dueIn = math.max(0, tonumber(nxt[2]) - S.now) end
  if S.A.continuous then
    local rv = redis.call('ZRANGE', K.due, 0, 0, 'WITHSCORES')
    if #rv == 2 then
      local d = math.max(0, tonumber(rv[2]) - S.now)
      if dueIn < 0 or d < dueIn then dueIn = d end
    end
  end
  if S.dueLeft > 0 then dueIn = 0 end -- more revisits due than one sweep moved
  if S.ending then dueIn = 0 end -- more last records to write: sweep again soon
  local out = {released = S.released, revisits = S.revisits, reclaimed = S.reclaimed, failed = S.failed,
    done = S.done, due_in = dueIn, empty = S.empty,
    enqueued = tonumber(redis.call('HGET', K.stats, 'enqueued') or '0'), pages = S.pages,
    leases = redis.call('ZCARD', K.leases), budget = S.budget, settings = S.settings,
    work = fr_queued(S.Q) + redis.call('ZCARD', K.deferred) + S.dueLeft + redis.call('ZCARD', K.samples)}
  if #S.stale > 0 then out.outbox = S.stale end -- (an empty table would encode as an object)
  if #S.written > 0 then out.records = S.written end
  return cjson.encode(out)
end
