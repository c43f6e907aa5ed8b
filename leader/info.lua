-- info.lua: who holds the lock, and for how long yet.
-- KEYS[1] the lock      KEYS[2] the epoch counter
-- Returns {value or false, PTTL in ms, last epoch minted}.
return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1]), tonumber(redis.call('GET', KEYS[2]) or '0')}
