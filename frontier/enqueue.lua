-- requires: bloom pushback
-- enqueue.lua: mark a batch of
-- URLs seen and queue them, in one atomic step, so a URL is never marked
-- seen without being queued.
-- KEYS: the Bloom filter's, then queues (the prefix, queue.lua), ready, stats,
--   lengths, refill, done flag (deleted when a URL is queued: a crawl with
--   work queued is not over, and no call between the two can say it is)
-- ARGV: the Bloom filter's, then one entry ("host\nparent\nelement") per URL,
--   then mode: 'new' queues the URLs the filter did not hold (links),
--   'all' queues every one, whatever the filter says (a seed the user
--   typed is never lost to a false positive; the filter still learns it),
--   then '1' to queue them at the front of their hosts' lists (the crawl's
--   order is depth-first: queue.lua), '0' at the back
-- Reply: the Bloom reply (flag 1: the URL was new to the filter).
local reply, key0, link0, links = bloom_run(1, 1)
local queues, ready, stats, lengths, refill, done =
  KEYS[key0], KEYS[key0 + 1], KEYS[key0 + 2], KEYS[key0 + 3], KEYS[key0 + 4], KEYS[key0 + 5]
if reply[1] == BLOOM_OK then
  local all = ARGV[link0 + links] == 'all'
  local queue = {}
  for i = 1, links do
    if all or reply[3 + i] == 1 then queue[#queue + 1] = ARGV[link0 + i - 1] end
  end
  local Q = fr_keys(queues, ready, stats, lengths, refill)
  Q.lifo = ARGV[link0 + links + 1] == '1'
  fr_push_back(Q, queue, fr_now())
  if #queue > 0 then
    redis.call('HINCRBY', stats, 'enqueued', #queue)
    redis.call('DEL', done)
  end
  redis.call('HINCRBY', stats, 'offered', links)
end
return reply
