-- enqueue.lua (appended to dedup's bloom.lua by dedup.Compose):
-- mark a batch of URLs seen and queue the new ones, in one atomic step, so
-- a URL is never marked seen without being queued.
-- KEYS: the Bloom filter's (see bloom.lua), then the queue list, then the stats hash
-- ARGV: the Bloom filter's, then one item (JSON) per URL
local reply, nk, na, n = bloom_run(1, 1)
if reply[1] == 1 then
  local queued = 0
  for i = 1, n do
    if reply[3 + i] == 1 then
      redis.call('LPUSH', KEYS[nk], ARGV[na + i - 1])
      queued = queued + 1
    end
  end
  if queued > 0 then redis.call('HINCRBY', KEYS[nk + 1], 'enqueued', queued) end
  redis.call('HINCRBY', KEYS[nk + 1], 'offered', n)
end
return reply
