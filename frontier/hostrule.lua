-- hostrule.lua (lib.lua, then this): a host's own rules, set by hand
-- (crawler host): its own rate and burst, kept in its shard's hostrules
-- ("rate burst", rate 0 for no limit), which every pop of the shard keeps
-- to instead of the crawl's (exchange_steps.lua's ex_rule) from its next
-- call: the host's tat (its score in ready, or refill) is held to at
-- most a full bucket of the new rate ahead, so a faster rate takes effect
-- at once (with no limit, the host is due now), a slower one from the
-- tokens already taken on; or all of them cleared, its pause too (one a
-- 429 or a hand set): the host is due again at once. A Crawl-delay or an
-- adaptive interval slower than its rate still holds. One atomic step.
-- KEYS[1] the shard's config (fr_ours)   KEYS[2] hostrules
-- KEYS[3] the host's bucket hash   KEYS[4] pauses   KEYS[5] ready
-- KEYS[6] refill
-- ARGV[1] the crawl instance the caller read   ARGV[2] 'set' or 'clear'
-- ARGV[3] the host   ARGV[4] rate   ARGV[5] burst (with 'set')
-- Returns 1, or the GONE error with nothing written when the crawl is gone.
if not fr_ours(KEYS[1], ARGV[1]) then return redis.error_reply(FR_GONE) end
local host = ARGV[3]
if ARGV[2] == 'set' then
  redis.call('HSET', KEYS[2], host, ARGV[4] .. ' ' .. ARGV[5])
  local rate, burst, now = tonumber(ARGV[4]), tonumber(ARGV[5]), fr_now()
  local most = now
  if rate > 0 then most = now + burst * 1000 / rate end
  for _, key in ipairs({KEYS[5], KEYS[6]}) do
    local tat = redis.call('ZSCORE', key, host)
    if tat and tonumber(tat) > most then redis.call('ZADD', key, 'XX', fr_tat(most), host) end
  end
  return 1
end
redis.call('HDEL', KEYS[2], host)
if redis.call('HDEL', KEYS[3], 'paused_until', 'pauses', 'why') > 0 then
  redis.call('ZREM', KEYS[4], host)
  -- A pause raised the host's tat to its end: due now instead.
  local now = fr_now()
  local tat = redis.call('ZSCORE', KEYS[5], host)
  if tat and tonumber(tat) > now then redis.call('ZADD', KEYS[5], 'XX', fr_int(now), host) end
end
return 1
