-- stats.lua: bits set in each segment.
-- KEYS[i] a segment.  Returns {BITCOUNT(KEYS[1]), ...}; a missing segment counts 0.
local out = {}
for i = 1, #KEYS do out[i] = redis.call('BITCOUNT', KEYS[i]) end
return out
