-- requires: schedule_steps
-- schedule_end.lua (a fence.Script body: KEYS[1]/ARGV[1] are the fence):
-- the scheduler's sweep, second of its two scripts, sent in one pipeline
-- right after schedule.lua: workers long gone forgotten, outbox entries
-- no ack came for handed to the scheduler, whether the shard is empty,
-- whether the crawl is over and its last records are written, and the
-- sweep's report. Refused as a whole for a stale leader.
--
-- What may run between the two: any other client's calls (exchanges,
-- 'crawler set'), and a new leader's sweep. Nothing here rests on what
-- schedule.lua did or found: the page budget, the revisits' cutoff, the
-- queues and the leases are read again, in this one atomic call, as they
-- stand; a URL schedule.lua put back is in its queue whoever pops it. A
-- new leader in between (its epoch higher) refuses this script, so a
-- sweep cut in two leaves its due work back and decides nothing: the new
-- leader's sweeps decide.
--
-- KEYS and ARGV: schedule.lua's (contract.lua's SC_KEYS; scheduleArgs),
-- of which this script reads all but max_attempts and failed_cap (limit:
-- the most last records a sweep writes; budget, results_cap, instance:
-- as schedule.lua's), and these:
--   forget_ms  forget workers this long after they stopped being alive (ms)
--   mode: '1', this is the crawl's only shard, and the sweep decides
--       whether the crawl is done; '0', a shard of several, whose sweep
--       only reports whether it is empty (Frontier.Schedule decides, over
--       all of them); 'end', Frontier.Schedule decided the crawl is over:
--       this shard ends as a lone one would; 'finish', as 'end', but
--       without setting the done flag: done is 1 when the shard's last
--       records are all written (Frontier.Schedule then ends them all)
--   outbox_age  how old an outbox entry is before the sweep acks it (ms)
--   continuous  true: the crawl never ends
--   settings  the settings version the scheduler acts on: older than the
--        shard's, the sweep ends no crawl (its budget may be another now)
-- Returns one JSON object (frontier.sweepReply reads it by name):
--   done        1 once nothing is queued, in flight or deferred (or the
--                page budget is spent and nothing is in flight) and every
--                last record is written; the flag is set in the same atomic
--                step as the check ('finish': 1 when this shard's last
--                records are written, no flag set)
--   due_in      ms until the next deferred item is due (-1: none; 0: the
--                crawl's end has more last records to write: sweep again)
--   empty       1: nothing queued, leased or deferred in this shard, and
--                no outbox entry waiting
--   outbox      the outbox entries older than outbox_age: id, entry, id, entry …
--                (absent: none)
--   enqueued    URLs ever queued at the back (a shard's work can only come
--                back through that counter)
--   pages       pages fetched in this shard
--   leases      URLs in flight in this shard
--   budget      this shard's share of the page budget (or the budget)
--   settings    the settings version in force in the shard
--   work        URLs queued or deferred in this shard
--   records     the records this script wrote (absent: none), which the
--                scheduler writes to its own --out too
-- or the GONE error, with nothing written, when the crawl is gone.

-- 1. sc_forget_workers: workers not alive for forget_ms leave the registry
-- and their notes (at most 1000 a sweep).
local function sc_forget_workers(S)
  local K = S.K
  local forgotten = redis.call('ZRANGEBYSCORE', K.workers, '-inf', S.now - S.A.forget_ms, 'LIMIT', 0, 1000)
  if #forgotten > 0 then
    redis.call('ZREM', K.workers, unpack(forgotten))
    redis.call('HDEL', K.workerinfo, unpack(forgotten))
  end
end

-- 2. sc_outbox (exchange.lua's outbox): entries no ack came for in
-- outbox_age ms are returned (at most 100 a sweep) for the scheduler to
-- offer their links and ack them itself; while any entry waits, the shard
-- is not empty (its links may not be queued yet, its records are not
-- written).
local function sc_outbox(S)
  local waiting, stale = redis.call('HLEN', S.K.outbox), {}
  if waiting == 0 then return 0, stale end
  local all = redis.call('HSCAN', S.K.outbox, 0, 'COUNT', 1000)[2]
  for i = 1, #all, 2 do
    local at = tonumber(string.match(all[i + 1], '^(%d+)'))
    if at and S.now - at >= S.A.outbox_age and #stale < 200 then
      stale[#stale + 1] = all[i]
      stale[#stale + 1] = all[i + 1]
    end
  end
  return waiting, stale
end

-- sc_due_left is how many URLs are due for a revisit by the cutoff
-- (schedule_steps.lua's sc_cutoff) and not queued yet: work still to do.
local function sc_due_left(S)
  local cutoff = sc_cutoff(S)
  if not cutoff then return 0 end
  return redis.call('ZCOUNT', S.K.due, '-inf', cutoff)
end

-- 3. sc_empty: nothing queued, leased, deferred, due (dueLeft) or waiting
-- in the outbox (waiting), no sample waiting for a render worker (its
-- links may be queued yet: frontier/samples.go); a continuous crawl is
-- never empty. It returns 1 or 0.
local function sc_empty(S, dueLeft, waiting)
  local K = S.K
  if not S.A.continuous and dueLeft == 0 and redis.call('ZCARD', K.leases) == 0 and fr_queued(S.Q) == 0
      and redis.call('ZCARD', K.deferred) == 0 and waiting == 0 and redis.call('ZCARD', K.samples) == 0 then
    return 1
  end
  return 0
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

-- 4. sc_end decides whether the crawl is over (done, 1 or 0) and whether
-- its last records are still being written (ending), for the page budget
-- B (sc_budget) and the revisits due (dueLeft). Mode '0', a shard of
-- several, only reads its flag; '1', the crawl's only shard, ends it when
-- nothing is queued, in flight, deferred or due (or the budget is spent
-- with nothing in flight), a continuous crawl never; 'end' and 'finish',
-- Frontier.Schedule decided it is over. The done flag is set only once
-- every last record is written, so the workers, which stop at the flag,
-- see every record; 'finish' writes them without setting it (done 1:
-- ready to end; Frontier.Schedule sets the flags once every shard is).
local function sc_end(S, B, dueLeft)
  local K, mode = S.K, S.A.mode
  if mode == '0' then return redis.call('EXISTS', K.done), false end
  if redis.call('EXISTS', K.done) == 1 then return 1, false end
  if S.oldSettings then return 0, false end -- its budget may be another now: the next sweep decides
  if mode == '1' then
    if S.A.continuous then return 0, false end
    local idle = fr_queued(S.Q) == 0 and redis.call('ZCARD', K.deferred) == 0 and dueLeft == 0
      and redis.call('ZCARD', K.samples) == 0
    if redis.call('ZCARD', K.leases) ~= 0 or not (idle or B.spent) then return 0, false end
  end
  if B.limited and not sc_last_records(S) then return 0, true end
  if mode ~= 'finish' then
    -- The first time: wake the idle workers (they poll about once a second
    -- otherwise), so that they learn at once that the crawl is over.
    if redis.call('SET', K.done, '1', 'NX') then redis.call('PUBLISH', K.queues .. 'wake', 'done') end
  end
  return 1, false
end

-- 5. sc_due_in is ms until the next deferred item or revisit is due (-1:
-- none), so that the scheduler sweeps again then rather than polling
-- often; 0, sweep again at once, when more revisits are due (dueLeft)
-- than one sweep moved, or the crawl's end has more last records to
-- write (ending).
local function sc_due_in(S, dueLeft, ending)
  if dueLeft > 0 or ending then return 0 end
  local K, dueIn = S.K, -1
  local nxt = redis.call('ZRANGE', K.deferred, 0, 0, 'WITHSCORES')
  if #nxt == 2 then dueIn = math.max(0, tonumber(nxt[2]) - S.now) end
  if S.A.continuous then
    local rv = redis.call('ZRANGE', K.due, 0, 0, 'WITHSCORES')
    if #rv == 2 then
      local d = math.max(0, tonumber(rv[2]) - S.now)
      if dueIn < 0 or d < dueIn then dueIn = d end
    end
  end
  return dueIn
end

-- The sweep's end, step by step.
local S, why = sc_begin() -- the keys and arguments named, and the guard
if not S then return redis.error_reply(why) end -- nothing written
local K = S.K
sc_forget_workers(S)                        -- 1. workers long gone leave the registry
local waiting, stale = sc_outbox(S)         -- 2. outbox entries no ack came for
local B, dueLeft = sc_budget(S), sc_due_left(S)
local empty = sc_empty(S, dueLeft, waiting) -- 3. is this shard empty
local done, ending = sc_end(S, B, dueLeft)  -- 4. is the crawl over (its last records written)
local out = {done = done, due_in = sc_due_in(S, dueLeft, ending), empty = empty, -- 5. the report
  enqueued = tonumber(redis.call('HGET', K.stats, 'enqueued') or '0'), pages = B.pages,
  leases = redis.call('ZCARD', K.leases), budget = B.budget, settings = S.settings,
  work = fr_queued(S.Q) + redis.call('ZCARD', K.deferred) + dueLeft + redis.call('ZCARD', K.samples)}
if #stale > 0 then out.outbox = stale end -- (an empty table would encode as an object)
if #S.written > 0 then out.records = S.written end
return cjson.encode(out)
