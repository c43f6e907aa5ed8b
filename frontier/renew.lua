-- renew.lua: a worker's heartbeat; extends the leases it still holds.
-- KEYS[1] leases   KEYS[2] workers (zset worker -> alive until, ms)
-- KEYS[3] the crawl's config: while it is missing the crawl is gone (reset)
-- ARGV[1] worker id   ARGV[2] lease length ms   ARGV[3..] leases ("id\nhost\nitem-json")
-- Returns how many leases were extended (a lost one is not revived), or
-- -1, with nothing written, when the crawl is gone.
-- A worker is alive until its leases would lapse: one lease length after
-- its last heartbeat.
if redis.call('EXISTS', KEYS[3]) == 0 then return -1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[1] ~= '' then redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), ARGV[1]) end -- '': leases only (Shards)
local n = 0
for i = 3, #ARGV do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[i])
end
return n
