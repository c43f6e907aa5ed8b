-- defer.lua (lib.lua, then this): give a leased URL back, to be fetched no
-- earlier than ARGV[3] ms from now (server time): a retry after an error,
-- or after the server's Retry-After. Never dropped, never busy-looped.
-- KEYS[1] in-flight   KEYS[2] leases   KEYS[3] deferred (zset entry -> ready ms)
-- ARGV[1] lease id    ARGV[2] the entry to store ("host\nitem-json")   ARGV[3] ms
-- Returns 1, or 0 when the lease was lost.
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], fr_now() + tonumber(ARGV[3]), ARGV[2])
return 1
