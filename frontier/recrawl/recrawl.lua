-- requires: gone
-- recrawl.lua: `crawler recrawl` in one shard (Frontier.Visits.Recrawl), a batch
-- a call. KEYS[1] due (zset URL -> when due, ms)  KEYS[2] stats
-- KEYS[3] done flag  KEYS[4] the crawl's config (missing: the crawl is gone)
-- ARGV[1] 'due' (the URLs due by ARGV[2]) or 'all' (every URL on the
-- schedule, made due at ARGV[2])  ARGV[2] the recrawl's time (ms, Redis's
-- clock)  ARGV[3] most URLs made due a call
-- Returns {n, 0} when it made n more URLs due (call again), or {0, due}
-- once the recrawl is asked for: its time in stats' 'recrawl_at' (the
-- sweep moves what is due by it: schedule.lua), the done flag cleared,
-- and due URLs due by it.
if redis.call('EXISTS', KEYS[4]) == 0 then return redis.error_reply(FR_GONE) end
local at = tonumber(ARGV[2])
if ARGV[1] == 'all' then
  local later = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[2], '+inf', 'LIMIT', 0, tonumber(ARGV[3]))
  if #later > 0 then
    local args = {}
    for i, url in ipairs(later) do
      args[2 * i - 1] = at
      args[2 * i] = url
    end
    redis.call('ZADD', KEYS[1], 'XX', unpack(args))
    return {#later, 0}
  end
end
local was = tonumber(redis.call('HGET', KEYS[2], 'recrawl_at') or '0')
redis.call('HSET', KEYS[2], 'recrawl_at', math.max(was, at))
redis.call('HDEL', KEYS[2], 'end_scan')
redis.call('DEL', KEYS[3])
return {0, redis.call('ZCOUNT', KEYS[1], '-inf', at)}
