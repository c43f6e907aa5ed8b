-- schedule.lua (a FencedScript body: KEYS[1]/ARGV[1] are the fence):
-- the scheduler's sweep. Due deferred items go back to the queue's front;
-- items whose lease expired go back with attempts+1, or to the failed list
-- past the maximum attempts. Refused as a whole for a stale leader.
-- KEYS[2] queue  KEYS[3] in-flight  KEYS[4] leases  KEYS[5] deferred  KEYS[6] failed  KEYS[7] stats
-- KEYS[8] done flag  KEYS[9] workers (zset worker -> last heartbeat ms)
-- ARGV[2] max attempts   ARGV[3] most items per sweep   ARGV[4] failed list cap
-- ARGV[5] page budget (0: none)   ARGV[6] forget workers silent this long (ms)
-- Returns {released, reclaimed, failed, done}. done is 1 once nothing is
-- queued, in flight or deferred (or the page budget is spent and nothing is
-- in flight); the flag is set in the same atomic step as the check.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[3])
local released, reclaimed, failed = 0, 0, 0

local due = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, limit)
for _, item in ipairs(due) do
  redis.call('ZREM', KEYS[5], item)
  redis.call('RPUSH', KEYS[2], item)
  released = released + 1
end

local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, limit)
for _, id in ipairs(expired) do
  local raw = redis.call('HGET', KEYS[3], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('ZREM', KEYS[4], id)
  if raw then
    local item = cjson.decode(raw)
    item.a = (item.a or 0) + 1
    if item.a >= tonumber(ARGV[2]) then
      item.err = 'lease expired ' .. item.a .. ' times (worker died or hung)'
      redis.call('LPUSH', KEYS[6], cjson.encode(item))
      redis.call('LTRIM', KEYS[6], 0, tonumber(ARGV[4]) - 1)
      redis.call('HINCRBY', KEYS[7], 'failed', 1)
      failed = failed + 1
    else
      redis.call('RPUSH', KEYS[2], cjson.encode(item))
      reclaimed = reclaimed + 1
    end
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[9], '-inf', now - tonumber(ARGV[6]))

local inflight = redis.call('HLEN', KEYS[3])
local budget = tonumber(ARGV[5])
local done = 0
if inflight == 0 and ((redis.call('LLEN', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[5]) == 0)
    or (budget > 0 and tonumber(redis.call('HGET', KEYS[7], 'pages') or '0') >= budget)) then
  redis.call('SET', KEYS[8], '1')
  done = 1
end
return {released, reclaimed, failed, done}
