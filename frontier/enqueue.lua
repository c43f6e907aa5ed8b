-- enqueue.lua (dedup's bloom.lua, then lib.lua, then this): mark a batch of
-- URLs seen and queue the new ones, in one atomic step, so a URL is never
-- marked seen without being queued.
-- KEYS: the Bloom filter's, then items, ready, stats
-- ARGV: the Bloom filter's, then one entry ("host\nitem-json") per URL
local reply, nk, na, n = bloom_run(1, 1)
if reply[1] == 1 then
  local fresh = {}
  for i = 1, n do
    if reply[3 + i] == 1 then fresh[#fresh + 1] = ARGV[na + i - 1] end
  end
  fr_push_many(KEYS[nk], KEYS[nk + 1], KEYS[nk + 2], fresh, false, fr_now())
  local queued = #fresh
  if queued > 0 then redis.call('HINCRBY', KEYS[nk + 2], 'enqueued', queued) end
  redis.call('HINCRBY', KEYS[nk + 2], 'offered', n)
end
return reply
