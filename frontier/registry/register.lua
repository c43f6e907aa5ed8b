-- requires: base
-- register.lua: a worker joins the crawl's registry under its id, unless a
-- live worker holds that id already.
-- KEYS[1] workers (zset worker -> alive until, ms)
-- KEYS[2] the crawl's config: while it is missing the crawl is gone (reset)
-- ARGV[1] worker id   ARGV[2] lease length ms   ARGV[3] the crawl's instance
-- id as the worker read it (base.lua's fr_ours: another instance is gone)
-- Returns 0 when registered (alive until one lease length from now); the
-- GONE error, with nothing written, when the crawl is gone; or, with nothing written,
-- the milliseconds (at least 1) until the live holder of the id lapses,
-- unless it heartbeats again meanwhile.
if not fr_ours(KEYS[2], ARGV[3]) then return redis.error_reply(FR_GONE) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ms = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if until_ms and until_ms > now then return until_ms - now end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 0
