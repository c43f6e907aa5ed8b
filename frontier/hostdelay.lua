-- requires: keys
-- hostdelay.lua: keep a host's own least interval between requests (its robots.txt's
-- Crawl-delay) in its bucket hash, where every pop reads it (the host is
-- marked in slowed: exchange.lua); and decide a URL of the host popped
-- before the pop knew of it: it goes now when its grant was the only one
-- the bucket remembers (a host not asked lately: the first request is due
-- at any interval), and the host's next token then comes a delay later;
-- else it must go back (the caller's next exchange requeues it: the
-- front of the host's queue, the host not offered before a delay from
-- then). The lease is read, never ended: a worker's leases end in its
-- exchanges.
-- KEYS[1] the bucket hash   KEYS[2] leases
-- KEYS[3] ready (host -> its bucket's tat, ms: tokens.lua)
-- KEYS[4] slowed   KEYS[5] refill   KEYS[6] queues (the prefix: the
-- host's lane, whose ready set it waits in, queue.lua)
-- ARGV[1] the delay, ms (0: none of its own)
-- ARGV[2] how long the bucket keeps a delay, ms
-- ARGV[3] the lease ("id\nhost\nitem-json"), or '' for none
-- ARGV[4] the tat its pop left when that pop found the bucket full
--         (exchange.lua's fresh), else ''
-- ARGV[5] the host
-- ARGV[6] how soon after now a URL that may go now must go, ms
--         (frontier.FirstRequestWithin)
-- Returns 2 when the URL may go now (or there is none), 1 when it must go
-- back, 0 when its lease was lost.
local key, delay, keep, host = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[5]
local function kept()
  if redis.call('PTTL', key) < keep then redis.call('PEXPIRE', key, fr_int(keep)) end
end
if delay <= 0 then
  redis.call('HDEL', key, 'delay')
  return 2
end
if ARGV[3] ~= '' and not redis.call('ZSCORE', KEYS[2], ARGV[3]) then return 0 end
redis.call('HSET', key, 'delay', fr_int(delay))
redis.call('HSET', KEYS[4], host, '1')
kept()
if ARGV[3] == '' then return 2 end
local now = fr_now()
local where, tat = fr_host_tat(fr_keys(KEYS[6], KEYS[3], nil, nil, KEYS[5]), host)
if ARGV[4] ~= '' and tat and tat == tonumber(ARGV[4]) and redis.call('HGET', key, 'first') ~= ARGV[4] then
  -- The bucket was full at the pop, no grant came since (the tat is the
  -- one it left), and no other URL of that pop went as the first: the
  -- host's first request, which goes within ARGV[6] ms of now or goes
  -- back (its caller's deadline). Its next token comes a delay after the
  -- latest it may go.
  redis.call('HSET', key, 'first', ARGV[4])
  redis.call('ZADD', where, 'GT', fr_int(now + tonumber(ARGV[6]) + delay), host)
  return 2
end
return 1
