-- leaky_queue.lua: a leaky bucket as a queue: each request is given the
-- next departure, an interval (1/rate) after the last, and waits for it;
-- one that would wait behind more than capacity others is refused. The
-- host sees an even stream, never two requests closer than the interval,
-- and the caller pays in waiting.
-- KEYS[1] the host's queue (string: the next free departure, µs)
-- ARGV[1] rate, a second   ARGV[2] capacity, requests waiting at most
-- Returns {ok, departure_µs}: the request goes at departure (ok 1), or is
-- refused (ok 0, departure now).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate, cap = tonumber(ARGV[1]), tonumber(ARGV[2])
local interval = 1000000 / rate
local nextfree = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
local dep = math.max(now, nextfree)
if (dep - now) / interval > cap then return {0, string.format('%d', now)} end
redis.call('SET', KEYS[1], string.format('%.17g', dep + interval), 'PX', math.ceil((dep + interval - now) / 1000) + 1)
return {1, string.format('%d', math.ceil(dep))}
