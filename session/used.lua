-- used.lua: a request got past the logged-out page with the session's
-- generation ARGV[1]: the session at KEYS[1] notes it (its field used
-- only grows), so that a login whose session the site refuses at once is
-- told from one whose session ran its course (Shared.Renew's strikes).
local used = tonumber(redis.call('HGET', KEYS[1], 'used') or '0') or 0
if tonumber(ARGV[1]) > used then redis.call('HSET', KEYS[1], 'used', ARGV[1]) end
return 1
