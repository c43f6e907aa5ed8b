-- init.lua: create a filter's meta hash once, and return what it holds.
-- KEYS[1] the meta hash
-- ARGV[1] n (items layer 0 is planned for)   ARGV[2] p (false-positive rate)
-- ARGV[3] growth factor                      ARGV[4] tightening ratio
-- ARGV[5] the bit layout's name (a filter written in another layout
--         cannot be read in this one)
-- Returns {n, p, growth, tightening, layers, count, layout} as stored, so a
-- client built with other parameters can see that and refuse to run.
if ARGV[1] ~= '' and redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'n', ARGV[1], 'p', ARGV[2], 'growth', ARGV[3],
    'tightening', ARGV[4], 'layers', 1, 'count', 0, 'layout', ARGV[5])
end
return redis.call('HMGET', KEYS[1], 'n', 'p', 'growth', 'tightening', 'layers', 'count', 'layout')
