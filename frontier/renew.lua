-- renew.lua: a worker's heartbeat; extends the leases it still holds.
-- KEYS[1] leases   KEYS[2] workers (zset worker -> last heartbeat ms)
-- ARGV[1] worker id   ARGV[2] lease length ms   ARGV[3..] leases ("id\nhost\nitem-json")
-- Returns how many leases were extended (a lost one is not revived).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[2], now, ARGV[1])
local n = 0
for i = 3, #ARGV do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[i])
end
return n
