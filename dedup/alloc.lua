-- alloc.lua: allocate bitmap segments up front, at their exact size.
-- KEYS[i] a segment      ARGV[i] its size in bytes
-- A segment created by SETBIT grows greedily (up to 1 MiB more than it
-- needs) and its first allocation stalls the server mid-crawl; a string of
-- zeros SET once, ahead of need, is exactly as big as planned. Existing
-- segments are left alone, so concurrent callers are harmless.
local made = 0
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    redis.call('SET', KEYS[i], string.rep('\0', tonumber(ARGV[i])))
    made = made + 1
  end
end
return made
