-- requires: base
-- hold.lua: pause or resume the whole crawl in one
-- shard, one atomic step. While a shard's paused key exists its pops hand
-- out nothing (exchange.lua's ex_pop reads it in the same call that would
-- pop), whatever a worker remembers or missed hearing; everything else
-- goes on: finished pages are recorded, leases renewed and swept, links
-- queued. The key holds "ms\nwho" (when, by whom), kept from the first
-- pause of a run of them. Pausing says so on the shard's wake channel
-- ('paused': its workers give back the URLs waiting in their buffers at
-- once, rather than at their next exchange's reply); resuming deletes the
-- key and wakes the shard's workers ('resumed'), which pop at once.
-- KEYS[1] the shard's config (base.lua's fr_ours)   KEYS[2] paused
-- ARGV[1] the crawl instance the caller read   ARGV[2] 'pause' or 'resume'
-- ARGV[3] who ('' for resume)   ARGV[4] the shard's wake channel
-- Returns 1 when the shard changed, 0 when it was so already, or the GONE
-- error with nothing written when the crawl is gone.
if not fr_ours(KEYS[1], ARGV[1]) then return redis.error_reply(FR_GONE) end
if ARGV[2] == 'pause' then
  if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
  redis.call('SET', KEYS[2], string.format('%d', fr_now()) .. '\n' .. ARGV[3])
  redis.call('PUBLISH', ARGV[4], 'paused')
  return 1
end
if redis.call('DEL', KEYS[2]) == 0 then return 0 end
redis.call('PUBLISH', ARGV[4], 'resumed')
return 1
