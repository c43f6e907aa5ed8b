-- finish.lua (dedup's bloom.lua, then lib.lua, then this): everything a
-- worker does when a page is done, in one atomic step: mark its links seen
-- and queue the new ones, record the result, count it, end the lease.
-- Children are queued in the same step as the ack, so a crash can never
-- lose them.
-- KEYS: the Bloom filter's, then items, ready, in-flight, leases, stats, failed, results
-- ARGV: the Bloom filter's, then one entry ("host\nitem-json") per link, then:
--   lease id, stats field ('' for none), result record (JSON, '' for none),
--   failed entry ('' for none), results cap, failed cap, fetched ('1' if a page was fetched)
local reply, nk, na, n = bloom_run(1, 1)
if reply[1] ~= 1 then return reply end -- stale layers / allocate first: the client retries
local items, ready, inflight, leases = KEYS[nk], KEYS[nk + 1], KEYS[nk + 2], KEYS[nk + 3]
local stats, failed, results = KEYS[nk + 4], KEYS[nk + 5], KEYS[nk + 6]
local a = na + n
local lease, stat, record, failure = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
local fresh = {}
for i = 1, n do
  if reply[3 + i] == 1 then fresh[#fresh + 1] = ARGV[na + i - 1] end
end
if #fresh > 0 then fr_push_many(items, ready, stats, fresh, false, fr_now()) end
local queued = #fresh
if queued > 0 then redis.call('HINCRBY', stats, 'enqueued', queued) end
if n > 0 then redis.call('HINCRBY', stats, 'offered', n) end
-- A lost lease (expired and reclaimed) means the item is queued again and
-- will produce its own result; only the holder records and counts.
if redis.call('HDEL', inflight, lease) == 1 then
  redis.call('ZREM', leases, lease)
  if stat ~= '' then redis.call('HINCRBY', stats, stat, 1) end
  if ARGV[a + 6] == '1' then redis.call('HINCRBY', stats, 'pages', 1) end
  if record ~= '' then
    redis.call('XADD', results, 'MAXLEN', '~', ARGV[a + 4], '*', 'rec', record, 'new_links', queued)
  end
  if failure ~= '' then
    redis.call('LPUSH', failed, failure)
    redis.call('LTRIM', failed, 0, tonumber(ARGV[a + 5]) - 1)
  end
end
return reply
