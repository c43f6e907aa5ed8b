-- allow.lua (a fence.Script body: KEYS[1]/ARGV[1] are the fence): moves
-- a shard's share of the page budget, the field 'allow' of its stats. Only
-- the elected scheduler moves shares, under its epoch (Frontier.Schedule).
-- KEYS[2] stats   KEYS[3] leases   KEYS[4] settings (the settings version
-- in force in the shard: settings.lua)
-- ARGV[2] the change: positive, a share given; negative, a share taken
--         back, never more than the shard leaves unused (allow − pages
--         fetched − URLs in flight, each of which may still become a page)
-- ARGV[3] the shard's wake channel: told when a share is given, so that
--         idle workers pop there again
-- ARGV[4] the settings version the scheduler acts on: older than the
--         shard's, no share is given (the budget may have been lowered
--         since the scheduler read it)
-- Returns the change made.
local d = tonumber(ARGV[2])
if d > 0 and (tonumber(ARGV[4]) or 0) < (tonumber(redis.call('GET', KEYS[4]) or '0') or 0) then return 0 end
if d < 0 then
  local unused = tonumber(redis.call('HGET', KEYS[2], 'allow') or '0') -
    tonumber(redis.call('HGET', KEYS[2], 'pages') or '0') - redis.call('ZCARD', KEYS[3])
  d = -math.min(-d, math.max(unused, 0))
end
if d ~= 0 then redis.call('HINCRBY', KEYS[2], 'allow', d) end
if d > 0 then redis.call('PUBLISH', ARGV[3], '1') end
return d
