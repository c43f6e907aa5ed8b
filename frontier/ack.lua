-- ack.lua: the item's work is done (its children already enqueued).
-- KEYS[1] leases   KEYS[2] stats hash   KEYS[3] failed list
-- ARGV[1] the lease ("id\nhost\nitem-json")
-- ARGV[2] stats field to count ('done', 'failed', ...)
-- ARGV[3] when not empty: the item (JSON, with its reason) to keep on the
--         failed list, capped at ARGV[4] entries
-- Returns 1, or 0 when the lease was lost (expired and reclaimed: the item
-- is queued again, and this ack changes nothing).
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
if ARGV[2] ~= '' then redis.call('HINCRBY', KEYS[2], ARGV[2], 1) end
if ARGV[3] ~= '' then
  redis.call('LPUSH', KEYS[3], ARGV[3])
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[4]) - 1)
end
return 1
