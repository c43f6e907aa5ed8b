-- sliding_log.lua: a sliding-window log: the times of the requests let
-- through in the last window, kept in a sorted set; a request is let
-- through while fewer than limit are. Exact (no second ever holds more
-- than limit), at the price of a member a request: memory grows with the
-- rate, where the others keep two numbers.
-- KEYS[1] the host's log (zset: member -> µs)
-- ARGV[1] limit, requests a window   ARGV[2] the window, ms
-- Returns {ok, now_µs}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit, win = tonumber(ARGV[1]), tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now - win * 1000))
local n = redis.call('ZCARD', KEYS[1])
if n >= limit then return {0, string.format('%d', now)} end
-- two requests in one µs: the member tells them apart by the count
redis.call('ZADD', KEYS[1], string.format('%d', now), string.format('%d.%d', now, n))
redis.call('PEXPIRE', KEYS[1], win)
return {1, string.format('%d', now)}
