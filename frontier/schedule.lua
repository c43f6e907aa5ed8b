-- schedule.lua (lib.lua, then this; a FencedScript body: KEYS[1]/ARGV[1]
-- are the fence): the scheduler's sweep. Due deferred entries go back to
-- the front of their host's queue; entries whose lease expired go back
-- with attempts+1, or to the failed list past the maximum attempts.
-- Refused as a whole for a stale leader.
-- KEYS[2] queues (the prefix, lib.lua)  KEYS[3] ready  KEYS[4] leases (zset "id\nhost\nitem-json" -> expiry ms)  KEYS[5] deferred
-- KEYS[6] failed  KEYS[7] stats  KEYS[8] done flag  KEYS[9] workers (zset worker -> alive until ms)
-- KEYS[11] results (stream): with the page budget spent, each URL still
-- waiting for a retry ends there with a failed record (ARGV[7]: the cap)
-- KEYS[12] lengths (lib.lua)
-- KEYS[10] the crawl's config: while it is missing the crawl is gone (reset),
-- and the sweep is refused with a GONE error before any write
-- ARGV[2] max attempts   ARGV[3] most entries per sweep   ARGV[4] failed list cap
-- ARGV[5] page budget (0: none; -1: this shard's share, the field 'allow' of its stats)   ARGV[6] forget workers this long after they stopped being alive (ms)
-- ARGV[8] '1': this is the crawl's only shard, and the sweep decides
--   whether the crawl is done; '0': a shard of several, whose sweep only
--   reports whether it is empty (Shards decides, over all of them); 'end':
--   Shards decided the crawl is over: this shard ends as a lone one would
-- Returns {released, reclaimed, failed, done, ms until the next deferred
-- item is due (-1: none), empty (1: nothing queued, leased or deferred),
-- enqueued (URLs ever queued at the back: a shard's work can only come
-- back through that counter)}. done is 1 once nothing is
-- queued, in flight or deferred (or the page budget is spent and nothing is
-- in flight); the flag is set in the same atomic step as the check.
if redis.call('EXISTS', KEYS[10]) == 0 then return redis.error_reply('GONE the crawl was reset') end
local queues, ready, leases, deferred = KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local failedKey, stats = KEYS[6], KEYS[7]
local Q = fr_keys(queues, ready, stats, KEYS[12])
local now = fr_now()
local limit = tonumber(ARGV[3])
local released, reclaimed, failed = 0, 0, 0

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
    failed = failed + 1
  else
    back[#back + 1] = host .. '\n' .. cjson.encode(item)
    reclaimed = reclaimed + 1
  end
end
fr_push_front(Q, back, now)
redis.call('ZREMRANGEBYSCORE', KEYS[9], '-inf', now - tonumber(ARGV[6]))

local empty = 0
if redis.call('ZCARD', leases) == 0 and fr_queued(Q) == 0 and redis.call('ZCARD', deferred) == 0 then empty = 1 end
local done = 0
if ARGV[8] == '0' then
  done = redis.call('EXISTS', KEYS[8])
elseif ARGV[8] == 'end' or redis.call('ZCARD', leases) == 0 and ((fr_queued(Q) == 0 and redis.call('ZCARD', deferred) == 0) or spent) then
  if spent then
    -- URLs waiting for a retry will never be fetched: each ends with a
    -- failed record, so that none goes without one.
    local waiting = redis.call('ZRANGE', deferred, 0, tonumber(ARGV[3]) - 1)
    for _, entry in ipairs(waiting) do
      local _, json = fr_split(entry)
      local ok, item = pcall(cjson.decode, json)
      if ok and type(item) == 'table' and item.u then
        local last = 'a retry'
        if type(item.e) == 'table' and #item.e > 0 then last = item.e[#item.e] end
        local rec = cjson.encode({url = item.u, depth = item.d or 0, parent = item.p, attempt = (item.a or 0) + 1,
          outcome = 'failed', error = last .. ' (not retried: the page budget is spent)'})
        redis.call('XADD', KEYS[11], 'MAXLEN', '~', ARGV[7], '*', 'rec', rec, 'new_links', '0')
        redis.call('HINCRBY', stats, 'records', 1)
        redis.call('HINCRBY', stats, 'failed', 1)
      end
    end
    if #waiting > 0 then redis.call('ZREM', deferred, unpack(waiting)) end
  end
  -- The first time: wake the idle workers (they poll about once a second
  -- otherwise), so that they learn at once that the crawl is over.
  if redis.call('SET', KEYS[8], '1', 'NX') then redis.call('PUBLISH', queues .. 'wake', 'done') end
  done = 1
end
-- When the next deferred item is due (ms from now, -1: none): the
-- scheduler sweeps again then rather than polling often.
local nxt = redis.call('ZRANGE', deferred, 0, 0, 'WITHSCORES')
local due_in = -1
if #nxt == 2 then due_in = math.max(0, tonumber(nxt[2]) - now) end
return {released, reclaimed, failed, done, due_in, empty, tonumber(redis.call('HGET', stats, 'enqueued') or '0'),
  pages, redis.call('ZCARD', leases), budget, fr_queued(Q) + redis.call('ZCARD', deferred)}
