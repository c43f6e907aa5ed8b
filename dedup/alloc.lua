-- alloc.lua: allocate one bitmap segment whole, before any bit is written.
-- KEYS[1] the filter's meta hash    KEYS[2] the segment
-- ARGV[1] the segment's size in bytes
-- ARGV[2] when > 0: now layers 0..ARGV[2]-1 are all allocated; record it
-- A bitmap grown by SETBIT as bits arrive is reallocated again and again and
-- ends up to twice its size (bench/README.md); one SETRANGE at its last
-- byte allocates it exactly. Segments
-- that exist are left alone, so concurrent callers are harmless.
if redis.call('STRLEN', KEYS[2]) == 0 then
  redis.call('SETRANGE', KEYS[2], tonumber(ARGV[1]) - 1, '\0')
end
local mark = tonumber(ARGV[2])
if mark > 0 and tonumber(redis.call('HGET', KEYS[1], 'allocated') or '0') < mark then
  redis.call('HSET', KEYS[1], 'allocated', mark)
end
return 1
