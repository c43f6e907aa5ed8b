-- digest.lua: the crawl's payload digest index (frontier/digests.go).
-- KEYS[1] the index (hash digest -> "uri\tdate-ns")  KEYS[2] the crawl's
-- config (missing: the crawl is gone, nothing is written)
-- ARGV[1] 'claim' or 'unclaim'  ARGV[2] the digest  ARGV[3] "uri\tdate-ns"
-- of the response that would archive it  ARGV[4] the index's cap
-- claim: returns the entry of a response archived with this digest before;
--   or nil, having noted ARGV[3] as that response if the index has room.
-- unclaim: deletes the entry if it is ARGV[3]'s.
if redis.call('EXISTS', KEYS[2]) == 0 then return redis.error_reply('GONE the crawl is gone from Redis') end
local v = redis.call('HGET', KEYS[1], ARGV[2])
if ARGV[1] == 'unclaim' then
  if v == ARGV[3] then redis.call('HDEL', KEYS[1], ARGV[2]) end
  return false
end
if v then return v end
if redis.call('HLEN', KEYS[1]) < tonumber(ARGV[4]) then redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
return false
