-- requeue.lua (lib.lua, then this): give a leased URL back to the front of
-- its host's queue because the host is busy, and tell the scheduler of pops
-- not to offer that host again for ARGV[3] ms.
-- KEYS[1] leases   KEYS[2] queues (the prefix, lib.lua)   KEYS[3] ready   KEYS[4] stats   KEYS[5] lengths
-- KEYS[6] refill
-- ARGV[1] the lease ("id\nhost\nitem-json")
-- ARGV[2] the entry ("host\nitem-json")   ARGV[3] ms
-- Returns 1, or 0 when the lease was lost.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local now = fr_now()
fr_push_front(fr_keys(KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]), {ARGV[2]}, now)
local host = fr_split(ARGV[2])
local due = now + tonumber(ARGV[3])
local cur = redis.call('ZSCORE', KEYS[3], host)
if not cur or tonumber(cur) < due then redis.call('ZADD', KEYS[3], due, host) end
return 1
