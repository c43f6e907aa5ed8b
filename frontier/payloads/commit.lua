-- requires: gone
-- commit.lua: a complete crawl's payload digests join what later crawls
-- may refer to (seed --dedup-from): its index copied whole to its
-- committed index (frontier/payloads/committed.go).
-- KEYS[1] the index  KEYS[2] the committed index  KEYS[3] the done flag
-- KEYS[4] the crawl's config (missing: the crawl is gone)
-- Returns the digests committed, or -1 when the crawl is not complete
-- (no done flag: running, or reopened), and then nothing is written. The
-- committed index's field '#' is when it was committed (ms, Redis's
-- clock); a digest is never '#'.
if redis.call('EXISTS', KEYS[4]) == 0 then return redis.error_reply(FR_GONE) end
if redis.call('EXISTS', KEYS[3]) == 0 then return -1 end
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('COPY', KEYS[1], KEYS[2], 'REPLACE')
else
  redis.call('DEL', KEYS[2])
end
local t = redis.call('TIME')
redis.call('HSET', KEYS[2], '#', t[1] * 1000 + math.floor(t[2] / 1000))
return redis.call('HLEN', KEYS[2]) - 1
