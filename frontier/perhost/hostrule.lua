-- requires: push pop
-- hostrule.lua: a host's own rules, set by hand
-- (crawler host): its own rate and burst, kept in its shard's hostrules
-- ("rate burst", rate 0 for no limit), which every pop of the shard keeps
-- to instead of the crawl's (hostbucket.lua's hb_rule) from its next
-- call: the host's tat (its score in ready, or refill) is held to at
-- most a full bucket of the new rate ahead, so a faster rate takes effect
-- at once (with no limit, the host is due now), a slower one from the
-- tokens already taken on; or all of them cleared, its pause too (one a
-- 429 or a hand set): the host is due again at once. A Crawl-delay or an
-- adaptive interval slower than its rate still holds. Or the host
-- blocked ('block', FR_BLOCKED): no pop hands out its URLs, links to it
-- are not queued (fr_push_back), and its queued URLs end with records
-- (fr_drop_blocked), up to ARGV[4] of them a call (the caller calls
-- again while some are left; the pops end any that come back later, a
-- thousand a visit). One atomic step each.
-- KEYS[1] the shard's config (fr_ours)   KEYS[2] hostrules
-- KEYS[3] the host's bucket hash   KEYS[4] pauses   KEYS[5] ready
-- KEYS[6] refill   KEYS[7] queues (the prefix)   KEYS[8] stats
-- KEYS[9] lengths   KEYS[10] results
-- ARGV[1] the crawl instance the caller read   ARGV[2] 'set', 'clear' or
-- 'block'   ARGV[3] the host   ARGV[4] rate (with 'set'), the most URLs
-- to end (with 'block')   ARGV[5] burst (with 'set'), the results
-- stream's cap (with 'block')   ARGV[6] why, with 'block' by the crawl
-- itself (its records' error: "not fetched: " why; none: blocked by hand)
-- Returns 1 ('set', 'clear'), or {URLs ended, 1 if its queue is empty}
-- ('block'); or the GONE error with nothing written when the crawl is
-- gone.
if not fr_ours(KEYS[1], ARGV[1]) then return redis.error_reply(FR_GONE) end
local host = ARGV[3]
if ARGV[2] == 'block' then
  local rule = FR_BLOCKED
  if (ARGV[6] or '') ~= '' then rule = FR_BLOCKED .. '\n' .. ARGV[6] end
  redis.call('HSET', KEYS[2], host, rule)
  local Q = fr_keys(KEYS[7], KEYS[5], KEYS[8], KEYS[9], KEYS[6], KEYS[2])
  local n, dry = fr_drop_blocked(Q, host, KEYS[10], tonumber(ARGV[5]), tonumber(ARGV[4]), fr_blocked(rule))
  if dry then
    redis.call('ZREM', fr_rkey(Q, host), host)
    redis.call('ZREM', KEYS[6], host)
    return {n, 1}
  end
  return {n, 0}
end
if ARGV[2] == 'set' then
  redis.call('HSET', KEYS[2], host, ARGV[4] .. ' ' .. ARGV[5])
  local rate, burst, now = tonumber(ARGV[4]), tonumber(ARGV[5]), fr_now()
  local most = now
  if rate > 0 then most = now + burst * 1000 / rate end
  local Q = fr_keys(KEYS[7], KEYS[5], KEYS[8], KEYS[9], KEYS[6], KEYS[2])
  for _, key in ipairs({fr_rkey(Q, host), KEYS[6]}) do
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
  local ready = fr_rkey(fr_keys(KEYS[7], KEYS[5], KEYS[8], KEYS[9], KEYS[6], KEYS[2]), host)
  local tat = redis.call('ZSCORE', ready, host)
  if tat and tonumber(tat) > now then redis.call('ZADD', ready, 'XX', fr_int(now), host) end
end
return 1
