-- swap.lua: the body of the session's fenced write (package fence runs
-- it only for the lock's current epoch): the session at KEYS[2] becomes
-- generation ARGV[2] + 1, state ARGV[3] ('ok' with cookies ARGV[4], or
-- 'failed' with why ARGV[4]), with ARGV[5] strikes (logins in a row whose
-- session no request got past the logged-out page with), but only where
-- it is still generation ARGV[2]: a worker that saw an older session
-- writes nothing.
-- It announces a new session on KEYS[2] .. ':renewed'. Returns the
-- session's generation after the call (ARGV[2] + 1 when it wrote).
local gen = tonumber(redis.call('HGET', KEYS[2], 'gen') or '0') or 0
if gen ~= tonumber(ARGV[2]) then return gen end
gen = gen + 1
local cookies, why = ARGV[4], ''
if ARGV[3] ~= 'ok' then cookies, why = '', ARGV[4] end
redis.call('HSET', KEYS[2], 'gen', string.format('%d', gen), 'state', ARGV[3], 'cookies', cookies, 'why', why,
  'strikes', ARGV[5])
redis.call('PUBLISH', KEYS[2] .. ':renewed', string.format('%d', gen)) -- the workers waiting on it
return gen
