-- defer.lua (lib.lua, then this): give a leased URL back, to be fetched no
-- earlier than ARGV[3] ms from now (server time): a retry after an error,
-- or after the server's Retry-After. Never dropped, never busy-looped.
-- KEYS[1] leases   KEYS[2] deferred (zset entry -> ready ms)
-- ARGV[1] the lease ("id\nhost\nitem-json")
-- ARGV[2] the entry to store ("host\nitem-json")   ARGV[3] ms
-- Returns 1, or 0 when the lease was lost.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], fr_now() + tonumber(ARGV[3]), ARGV[2])
return 1
