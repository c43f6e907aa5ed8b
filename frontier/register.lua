local GONE = 'GONE the crawl is gone from Redis' -- the one refusal of a gone crawl (frontier.ErrGone)
-- register.lua: a worker joins the crawl's registry under its id, unless a
-- live worker holds that id already.
-- KEYS[1] workers (zset worker -> alive until, ms)
-- KEYS[2] the crawl's config: while it is missing the crawl is gone (reset)
-- ARGV[1] worker id   ARGV[2] lease length ms
-- Returns 0 when registered (alive until one lease length from now); the
-- GONE error, with nothing written, when the crawl is gone; or, with nothing written,
-- the milliseconds (at least 1) until the live holder of the id lapses,
-- unless it heartbeats again meanwhile.
if redis.call('EXISTS', KEYS[2]) == 0 then return redis.error_reply(GONE) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ms = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if until_ms and until_ms > now then return until_ms - now end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 0
