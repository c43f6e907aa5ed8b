-- hostdelay.lua (lib.lua, politeness's tokens.lua, then this): keep a
-- host's own least interval between requests (its robots.txt's
-- Crawl-delay) in its token bucket, where every pop reads it; and decide a
-- URL of the host popped before the pop knew of it: it goes now when its
-- bucket has a token at that interval (taken), or when its grant was the
-- only one the bucket remembers (a host not asked lately: the first
-- request is due at any interval); else it goes back to the front of the
-- host's queue, not offered before the bucket has a token.
-- KEYS[1] the bucket   KEYS[2] leases   KEYS[3] queues (the prefix, lib.lua)
-- KEYS[4] ready   KEYS[5] stats   KEYS[6] lengths
-- KEYS[7] slowed (exchange.lua): the host is marked there when ARGV[6] is 1
--         (a crawl without a rate, whose pops read only marked buckets)
-- ARGV[1] the delay, ms (0: none of its own)
-- ARGV[2] how long the bucket keeps a delay, ms
-- ARGV[3] the lease ("id\nhost\nitem-json"), or '' for none
-- ARGV[4] its entry ("host\nitem-json")
-- ARGV[5] the time of its pop (µs, a string) when the pop found the
--         bucket without a grant (exchange.lua's fresh), else ''
-- ARGV[6] '1' to mark the host in slowed   ARGV[7] the host
-- Returns 2 when the URL may go now (or there is none), 1 when it went
-- back, 0 when its lease was lost.
local key, delay, keep = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local function kept()
  if redis.call('PTTL', key) < keep then redis.call('PEXPIRE', key, keep) end
end
if delay <= 0 then
  redis.call('HDEL', key, 'delay')
  return 2
end
if ARGV[3] ~= '' and not redis.call('ZSCORE', KEYS[2], ARGV[3]) then return 0 end
redis.call('HSET', key, 'delay', delay)
if ARGV[6] == '1' then redis.call('HSET', KEYS[7], ARGV[7], 1) end
if ARGV[3] == '' then
  kept()
  return 2
end
local now, rate = tb_now(), 1000 / delay
local b = tb_read(key)
local level, first = tb_level(b, now, rate, 1), false
if ARGV[5] ~= '' and (not b.tokens or b.last == tonumber(ARGV[5]))
    and redis.call('HGET', key, 'first') ~= ARGV[5] then
  -- No grant before this URL's pop, none since, and no other URL of that
  -- pop went as the first: the host's first request.
  level, first = 1, true
end
if level >= 1 then
  redis.call('HSET', key, 'tokens', string.format('%.17g', level - 1), 'last', string.format('%.17g', now))
  if first then redis.call('HSET', key, 'first', ARGV[5]) end
  kept()
  return 2
end
kept()
redis.call('ZREM', KEYS[2], ARGV[3])
local ms = fr_now()
fr_push_front(fr_keys(KEYS[3], KEYS[4], KEYS[5], KEYS[6]), {ARGV[4]}, ms)
local due = ms + math.ceil(tb_until(level, rate) / 1e6)
local host = fr_split(ARGV[4])
local cur = redis.call('ZSCORE', KEYS[4], host)
if not cur or tonumber(cur) < due then redis.call('ZADD', KEYS[4], due, host) end
return 1
