-- pop.lua (lib.lua, then this): take the next URL of a host that is due,
-- and hold it under a lease.
-- KEYS[1] items   KEYS[2] ready   KEYS[3] in-flight (hash id -> entry)
-- KEYS[4] leases (zset id -> expiry ms)   KEYS[5] stats   KEYS[6] done flag
-- ARGV[1] lease id (unique per pop)   ARGV[2] lease length ms
-- ARGV[3] per-host spacing ms: the host is not due again before then
-- ARGV[4] '1' when the crawl has a page budget (then the page count rides along)
-- Returns {item-json or false, pages fetched so far (0 without a budget),
-- done flag (read when nothing was popped, or with a budget), host or false, ms until
-- the next host is due (-1: nothing queued)}. The counters
-- ride along so a worker needs no extra round trip for its page budget or
-- to learn the crawl is over. Until acked, the entry is in the in-flight
-- hash; when its lease runs out the scheduler puts it back (schedule.lua).
-- Every redis.call costs a few microseconds of the server's single
-- thread: read the counters only when they can matter.
local pages, done = 0, 0
if ARGV[4] == '1' then -- a budget can end the crawl with URLs still queued
  pages = tonumber(redis.call('HGET', KEYS[5], 'pages') or '0')
  done = redis.call('EXISTS', KEYS[6])
end
local spacing = tonumber(ARGV[3])
local now = fr_now()
for _ = 1, 32 do
  local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 1)
  if #due == 0 then break end
  local host = due[1]
  local first = redis.call('ZRANGEBYLEX', KEYS[1], '[' .. host .. '\0', '(' .. host .. '\1', 'LIMIT', 0, 1)
  if #first == 0 then
    redis.call('ZREM', KEYS[2], host) -- its queue ran dry; a new URL brings it back
  else
    redis.call('ZREM', KEYS[1], first[1])
    local json = string.sub(first[1], #host + 20) -- after host \0 class seq(16) \0
    if spacing > 0 then redis.call('ZADD', KEYS[2], now + spacing, host) end
    redis.call('HSET', KEYS[3], ARGV[1], host .. '\n' .. json)
    redis.call('ZADD', KEYS[4], now + tonumber(ARGV[2]), ARGV[1])
    return {json, pages, done, host, 0}
  end
end
done = redis.call('EXISTS', KEYS[6])
local nxt = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
local wait = -1
if #nxt == 2 then wait = math.max(0, tonumber(nxt[2]) - now) end
return {false, pages, done, false, wait}
