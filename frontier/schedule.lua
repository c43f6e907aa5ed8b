-- schedule.lua (lib.lua, then this; a FencedScript body: KEYS[1]/ARGV[1]
-- are the fence): the scheduler's sweep. Due deferred entries go back to
-- the front of their host's queue; entries whose lease expired go back
-- with attempts+1, or to the failed list past the maximum attempts.
-- Refused as a whole for a stale leader.
-- KEYS[2] queues (the prefix, lib.lua)  KEYS[3] ready  KEYS[4] leases (zset "id\nhost\nitem-json" -> expiry ms)  KEYS[5] deferred
-- KEYS[6] failed  KEYS[7] stats  KEYS[8] done flag  KEYS[9] workers (zset worker -> alive until ms)
-- KEYS[11] results (stream): each URL the sweep ends gets a failed record
-- there (frontier.SweptRecord): with the page budget spent, each one still
-- waiting for a retry; and each whose lease expired the maximum times
-- KEYS[12] lengths (lib.lua)
-- KEYS[10] the crawl's config: while it is missing the crawl is gone (reset),
-- and the sweep is refused with the GONE error before any write
-- ARGV[2] max attempts   ARGV[3] most entries per sweep   ARGV[4] failed list cap
-- ARGV[5] page budget (0: none; -1: this shard's share, the field 'allow' of its stats)   ARGV[6] forget workers this long after they stopped being alive (ms)
-- ARGV[7] the results stream's cap (XADD MAXLEN ~)
-- KEYS[13] the outbox (exchange.lua)   ARGV[9] how old an outbox entry is before the sweep acks it (ms)
-- KEYS[15] worker info (hash worker -> its last heartbeat's note:
--   renew.lua), whose forgotten workers go with them
-- KEYS[16] refill (lib.lua)
-- KEYS[17] the fence's log (stream): this sweep's epoch, ARGV[1], added
--   once the fence let it through (frontier.Keys.Sweeps)
-- KEYS[14] due (zset "host\nelement\nvisit" -> when the URL's revisit is
--   due, ms): frontier/visit.go
-- ARGV[11] the crawl's instance id as the scheduler read it (lib.lua's fr_ours)
-- ARGV[10] '1': the crawl is continuous: URLs due by now go back to their
--   hosts' queues, and the crawl never ends; '0': only those due by a
--   recrawl's time (stats' 'recrawl_at', recrawl.lua), and the crawl ends
--   when they are fetched
-- ARGV[8] '1': this is the crawl's only shard, and the sweep decides
--   whether the crawl is done; '0': a shard of several, whose sweep only
--   reports whether it is empty (Frontier.Schedule decides, over all of them); 'end':
--   Frontier.Schedule decided the crawl is over: this shard ends as a lone one would;
--   'finish': as 'end', but without setting the done flag: done is 1 when
--   the shard's last records are all written (Frontier.Schedule then ends them all)
-- Returns one JSON object (frontier.sweepReply reads it by name):
--   released    due deferred entries put back in the queues
--   revisits    URLs due for a revisit put back in the queues
--   reclaimed   expired leases put back, with attempts+1
--   failed      expired leases that reached the maximum attempts
--   done        1 once nothing is queued, in flight or deferred (or the
--                page budget is spent and nothing is in flight) and every
--                last record is written; the flag is set in the same atomic
--                step as the check ('finish': 1 when this shard's last
--                records are written, no flag set)
--   due_in      ms until the next deferred item is due (-1: none; 0: the
--                crawl's end has more last records to write: sweep again)
--   empty       1: nothing queued, leased or deferred in this shard, and
--                no outbox entry waiting
--   outbox      the outbox entries older than ARGV[9]: id, entry, id, entry …
--                (absent: none)
--   enqueued    URLs ever queued at the back (a shard's work can only come
--                back through that counter)
--   pages       pages fetched in this shard
--   leases      URLs in flight in this shard
--   budget      this shard's share of the page budget (or the budget)
--   work        URLs queued or deferred in this shard
--   records     the records this sweep wrote (absent: none), which the
--                scheduler writes to its own --out too
-- or the GONE error, with nothing written, when the crawl is gone.
if not fr_ours(KEYS[10], ARGV[11]) then return redis.error_reply('GONE the crawl is gone from Redis') end
do
  local q = KEYS[2] .. 'x' -- a queue: the queues share their prefix
  local why = fr_unsound_stats(KEYS[7]) or fr_denied({
    {'XADD', KEYS[17], '*', 'x', 'x'}, {'XADD', KEYS[11], '*', 'x', 'x'}, {'HINCRBY', KEYS[7], 'x', '1'}, {'HSET', KEYS[7], 'x', '1'},
    {'ZREM', KEYS[4], 'x'}, {'ZREM', KEYS[5], 'x'}, {'ZADD', KEYS[3], '1', 'x'}, {'LPUSH', KEYS[6], 'x'}, {'LTRIM', KEYS[6], '0', '1'},
    {'LPUSH', q, 'x'}, {'LPOP', q, '1'}, {'DEL', q}, {'HDEL', KEYS[12], 'x'}, {'SET', KEYS[8], '1'}, {'PUBLISH', KEYS[2] .. 'wake', '1'},
  })
  if why then return redis.error_reply(why) end -- nothing written
end
redis.call('XADD', KEYS[17], 'MAXLEN', '~', '10000', '*', 'epoch', ARGV[1])
local queues, ready, leases, deferred = KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local failedKey, stats = KEYS[6], KEYS[7]
local Q = fr_keys(queues, ready, stats, KEYS[12], KEYS[16])
Q.failed = failedKey -- what is not well formed goes there (fr_set_aside)
local now = fr_now()
local limit = tonumber(ARGV[3])
local released, reclaimed, failed = 0, 0, 0
local written = {} -- the records this sweep adds to the results stream, for the scheduler's own --out

-- swept adds a record for a URL the sweep ends (frontier.SweptRecord).
local function swept(item, err)
  local rec = cjson.encode({url = item.u, depth = item.d or 0, parent = item.p, attempt = tonumber(item.a) or 0,
    outcome = 'failed', error = err})
  redis.call('XADD', KEYS[11], 'MAXLEN', '~', ARGV[7], '*', 'rec', rec, 'new_links', '0')
  redis.call('HINCRBY', stats, 'records', 1)
  written[#written + 1] = rec
end

local budget = tonumber(ARGV[5])
local limited = budget ~= 0
if budget < 0 then budget = tonumber(redis.call('HGET', stats, 'allow') or '0') end
local pages = tonumber(redis.call('HGET', stats, 'pages') or '0')
local spent = limited and pages >= budget

-- A retry goes back to the queue only while the budget has room for it
-- beyond the URLs in flight (each may still become a page). Otherwise it
-- stays deferred: fetched later if room opens, or ended below with its
-- failed record once the budget is spent, never left queued without one.
local release = limit
if limited then release = math.min(limit, budget - pages - redis.call('ZCARD', leases)) end
local due = {}
if release > 0 then due = redis.call('ZRANGEBYSCORE', deferred, '-inf', now, 'LIMIT', 0, release) end
if #due > 0 then
  redis.call('ZREM', deferred, unpack(due))
  fr_push_front(Q, due, now)
  released = #due
end

-- Revisits: the URLs due go to the front of their hosts' queues as items
-- that carry their visit (Item.V), and off the due set until the exchange
-- that ends their fetch puts them back on it.
local cutoff
if ARGV[10] == '1' then cutoff = now end
local recrawl = tonumber(redis.call('HGET', stats, 'recrawl_at') or '')
if recrawl and (not cutoff or recrawl > cutoff) then cutoff = recrawl end
local revisits = 0
if cutoff then
  local room = release - released -- the budget's room, less the retries released above
  local urls = {}
  if room > 0 then urls = redis.call('ZRANGEBYSCORE', KEYS[14], '-inf', cutoff, 'LIMIT', 0, room) end
  if #urls > 0 then
    local entries = {}
    for _, member in ipairs(urls) do -- "host\nelement\nvisit"
      local i = string.find(member, '\n', 1, true)
      local j = i and string.find(member, '\n', i + 1, true)
      local host, el, visit
      if j then host, el, visit = string.sub(member, 1, i - 1), string.sub(member, i + 1, j - 1), string.sub(member, j + 1) end
      if j and el ~= '' and string.byte(el, 1) ~= FR_MARK and fr_wellformed(el) then
        local item = fr_json(host, el, nil)
        entries[#entries + 1] = host .. '\n' .. string.sub(item, 1, -2) .. ',"v":' .. cjson.encode(visit) .. '}'
      else
        fr_set_aside(Q, host or '?', {member})
      end
    end
    redis.call('ZREM', KEYS[14], unpack(urls))
    fr_push_front(Q, entries, now)
    revisits = #entries
  end
end

local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, limit)
if #expired > 0 then redis.call('ZREM', leases, unpack(expired)) end
local back = {}
for _, lease in ipairs(expired) do
  local _, entry = fr_split(lease) -- "id\nhost\nitem-json"
  local host, json = fr_split(entry)
  local ok, item = pcall(cjson.decode, json)
  if not ok or type(item) ~= 'table' then
    -- Not ours to read: park it with the reason, rather than fail every sweep.
    item = {u = json, a = tonumber(ARGV[2])}
  end
  item.a = (item.a or 0) + 1
  if type(item.e) ~= 'table' then item.e = {} end
  item.e[#item.e + 1] = 'lease expired (worker died or hung)'
  if item.a >= tonumber(ARGV[2]) then
    item.err = 'lease expired ' .. item.a .. ' times (worker died or hung)'
    redis.call('LPUSH', failedKey, cjson.encode(item))
    redis.call('LTRIM', failedKey, 0, tonumber(ARGV[4]) - 1)
    redis.call('HINCRBY', stats, 'failed', 1)
    if item.u then swept(item, item.err) end -- its fetches (by workers that died) end with a record
    failed = failed + 1
  else
    back[#back + 1] = host .. '\n' .. cjson.encode(item)
    reclaimed = reclaimed + 1
  end
end
fr_push_front(Q, back, now)
local forgotten = redis.call('ZRANGEBYSCORE', KEYS[9], '-inf', now - tonumber(ARGV[6]), 'LIMIT', 0, 1000)
if #forgotten > 0 then
  redis.call('ZREM', KEYS[9], unpack(forgotten))
  redis.call('HDEL', KEYS[15], unpack(forgotten))
end

-- The outbox (exchange.lua): entries no ack came for in ARGV[9] ms are
-- returned (at most 100 a sweep) for the scheduler to offer their links
-- and ack them itself; while any entry waits, the shard is not empty (its
-- links may not be queued yet, its records are not written).
local waiting, stale = redis.call('HLEN', KEYS[13]), {}
if waiting > 0 then
  local all = redis.call('HSCAN', KEYS[13], 0, 'COUNT', 1000)[2]
  for i = 1, #all, 2 do
    local at = tonumber(string.match(all[i + 1], '^(%d+)'))
    if at and now - at >= tonumber(ARGV[9]) and #stale < 200 then
      stale[#stale + 1] = all[i]
      stale[#stale + 1] = all[i + 1]
    end
  end
end
local empty = 0
-- URLs due by a recrawl's time that are not queued yet are work still to
-- do; a continuous crawl is never empty.
local dueLeft = 0
if cutoff then dueLeft = redis.call('ZCOUNT', KEYS[14], '-inf', cutoff) end
if ARGV[10] ~= '1' and dueLeft == 0 and redis.call('ZCARD', leases) == 0 and fr_queued(Q) == 0 and redis.call('ZCARD', deferred) == 0 and waiting == 0 then empty = 1 end
-- At the end of a budgeted crawl, a host's queue is scanned for URLs that
-- were tried before (attempts > 0): a retry or a reclaimed lease goes back
-- to the front of its host's queue as item JSON, so they are all in the
-- queue's leading run of JSON elements (at most END_SCAN_RUN of it is
-- read). Each gets its last record (ended); the rest of the run stays, in
-- order. END_SCAN_HOSTS hosts a sweep at most; the next sweep goes on.
local END_SCAN_RUN, END_SCAN_HOSTS = 1000, 2000
local function fr_end_tried(Q, host, cap, ended)
  local key = Q.queues .. host
  local run = {}
  while #run < cap do
    local els = redis.call('LRANGE', key, #run, #run + 99)
    local more = #els == 100
    for _, el in ipairs(els) do
      if string.byte(el, 1) ~= FR_JSON or #run >= cap then
        more = false
        break
      end
      run[#run + 1] = el
    end
    if not more then break end
  end
  local keep, n = {}, 0
  for _, el in ipairs(run) do
    local ok, item = pcall(cjson.decode, el)
    if ok and type(item) == 'table' and item.u and (tonumber(item.a) or 0) > 0 then
      ended(item)
      n = n + 1
    else
      keep[#keep + 1] = el
    end
  end
  if n == 0 then return 0 end
  redis.call('LTRIM', key, #run, -1)
  if #keep > 0 then
    local rev = {}
    for i = #keep, 1, -1 do rev[#rev + 1] = keep[i] end
    redis.call('LPUSH', key, unpack(rev)) -- back at the front, in their order
  end
  if redis.call('HINCRBY', Q.lengths, host, -n) <= 0 then
    redis.call('HDEL', Q.lengths, host)
    redis.call('ZREM', Q.ready, host)
    redis.call('DEL', key) -- what is left is a marker, no URL
  end
  fr_count(Q, -n)
  return n
end

local done = 0
local ending = false -- the crawl is over, and its last records are not all written yet
if ARGV[8] == '0' then
  done = redis.call('EXISTS', KEYS[8])
elseif redis.call('EXISTS', KEYS[8]) == 1 then
  done = 1
elseif ARGV[10] == '1' and ARGV[8] == '1' then
  done = 0 -- a continuous crawl never ends on its own
elseif ARGV[8] ~= '1' or redis.call('ZCARD', leases) == 0 and ((fr_queued(Q) == 0 and redis.call('ZCARD', deferred) == 0 and dueLeft == 0) or spent) then
  -- The crawl is over ('end', 'finish': Shards decided so). With a page
  -- budget, a URL that was tried and waits for another try will never get
  -- it: each ends with a failed record, so that none goes without one —
  -- those deferred, and those released to their host's queue (retries and
  -- reclaimed leases go to its front) that no pop took before the budget
  -- ran out. The done flag is set only once all are written, so `export
  -- --follow` and the workers, which stop at the flag, see every record.
  local finished = true
  if limited then
    local function last_record(item)
      local last = 'a retry'
      if type(item.e) == 'table' and #item.e > 0 then last = item.e[#item.e] end
      local tried = {u = item.u, d = item.d, p = item.p, a = (tonumber(item.a) or 0) + 1}
      swept(tried, last .. ' (not retried: the page budget is spent)')
      redis.call('HINCRBY', stats, 'failed', 1)
    end
    local waiting = redis.call('ZRANGE', deferred, 0, limit - 1)
    for _, entry in ipairs(waiting) do
      local _, json = fr_split(entry)
      local ok, item = pcall(cjson.decode, json)
      if ok and type(item) == 'table' and item.u then last_record(item) end
    end
    if #waiting > 0 then redis.call('ZREM', deferred, unpack(waiting)) end
    finished = redis.call('ZCARD', deferred) == 0
    local scan = redis.call('HGET', stats, 'end_scan') -- nil: not begun; a cursor; 'done'
    if finished and scan ~= 'done' then
      local cursor, hosts = scan or '0', 0
      repeat
        local r = redis.call('HSCAN', Q.lengths, cursor, 'COUNT', 100)
        cursor = r[1]
        for i = 1, #r[2], 2 do
          fr_end_tried(Q, r[2][i], END_SCAN_RUN, last_record)
          hosts = hosts + 1
        end
      until cursor == '0' or hosts >= END_SCAN_HOSTS
      if cursor == '0' then
        redis.call('HSET', stats, 'end_scan', 'done')
      else
        redis.call('HSET', stats, 'end_scan', cursor)
        finished = false
      end
    end
  end
  if not finished then
    ending = true
  elseif ARGV[8] == 'finish' then
    done = 1 -- ready to end; Shards sets the flags once every shard is
  else
    -- The first time: wake the idle workers (they poll about once a second
    -- otherwise), so that they learn at once that the crawl is over.
    if redis.call('SET', KEYS[8], '1', 'NX') then redis.call('PUBLISH', queues .. 'wake', 'done') end
    done = 1
  end
end
-- When the next deferred item is due (ms from now, -1: none): the
-- scheduler sweeps again then rather than polling often.
local nxt = redis.call('ZRANGE', deferred, 0, 0, 'WITHSCORES')
local due_in = -1
if #nxt == 2 then due_in = math.max(0, tonumber(nxt[2]) - now) end
if ARGV[10] == '1' then -- and when the next revisit is
  local rv = redis.call('ZRANGE', KEYS[14], 0, 0, 'WITHSCORES')
  if #rv == 2 then
    local d = math.max(0, tonumber(rv[2]) - now)
    if due_in < 0 or d < due_in then due_in = d end
  end
end
if dueLeft > 0 then due_in = 0 end -- more revisits due than one sweep moved
if ending then due_in = 0 end -- more last records to write: sweep again soon
local out = {released = released, revisits = revisits, reclaimed = reclaimed, failed = failed, done = done, due_in = due_in, empty = empty,
  enqueued = tonumber(redis.call('HGET', stats, 'enqueued') or '0'), pages = pages, leases = redis.call('ZCARD', leases),
  budget = budget, work = fr_queued(Q) + redis.call('ZCARD', deferred) + dueLeft}
if #stale > 0 then out.outbox = stale end -- (an empty table would encode as an object)
if #written > 0 then out.records = written end
return cjson.encode(out)
