-- robots_fail.lua: record that a host's robots.txt could not be had (no
-- answer, 429 or 5xx), and when it may be tried again.
-- KEYS[1] the host's robots hash   KEYS[2] its lock, released if still ARGV[5]'s
-- ARGV[1] status (0: no answer)   ARGV[2] first back-off ms
-- ARGV[3] longest back-off ms     ARGV[4] keep the history this long past the next try (ms)
-- ARGV[5] the fetching worker's lock token
-- The back-off doubles with each failure in a row, so every worker of the
-- crawl waits the same, shared time; first_fail survives the retries, so
-- a give-up can be measured from the first failure. A success replaces
-- the whole hash (robots_store.lua).
-- Returns {failures in a row, ms since the first, ms until the next try}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local first = tonumber(redis.call('HGET', KEYS[1], 'first_fail') or '')
if not first then first = now end
local backoff = math.min(tonumber(ARGV[2]) * 2 ^ (n - 1), tonumber(ARGV[3]))
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'body', '', 'first_fail', first, 'retry_at', now + backoff)
redis.call('PEXPIRE', KEYS[1], backoff + tonumber(ARGV[4]))
if redis.call('GET', KEYS[2]) == ARGV[5] then redis.call('DEL', KEYS[2]) end
return {n, now - first, backoff}
