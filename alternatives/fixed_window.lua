-- fixed_window.lua: a fixed window counter, the limiter of most blog posts
-- done atomically: at most limit requests in each window of the server's
-- clock (windows start at multiples of the window since the epoch).
-- KEYS[1] the host's counter (hash: w the window's number, n its count)
-- ARGV[1] limit, requests a window   ARGV[2] the window, ms
-- Returns {ok, now_µs}. Its flaw: a window's requests may all come at its
-- end and the next window's at its start, so a second that straddles the
-- edge lets through twice the limit.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local limit, win = tonumber(ARGV[1]), tonumber(ARGV[2])
local w = math.floor(now / (win * 1000))
local s = redis.call('HMGET', KEYS[1], 'w', 'n')
local n = 0
if tonumber(s[1]) == w then n = tonumber(s[2]) or 0 end
if n >= limit then return {0, string.format('%d', now)} end
redis.call('HSET', KEYS[1], 'w', string.format('%d', w), 'n', n + 1)
redis.call('PEXPIRE', KEYS[1], win)
return {1, string.format('%d', now)}
