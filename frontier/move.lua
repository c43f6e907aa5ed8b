-- requires: pushback
-- move.lua: seeds the filter has seen take the places their items ask
-- for (a seed's priority), decided by a caller that read their hosts'
-- lists and the leases under WATCH of those lists (move.go): this script
-- runs in that transaction's MULTI, so no pop and no push of those hosts
-- came between the reads and these writes. For each seed, either
--   - it waits in a list at another level: its old element comes off and
--     the new entry goes in (a move, the counts unchanged), or
--   - it waits nowhere and is not leased (fetched already, or a false
--     positive of the filter): the new entry goes in (queued again, as
--     enqueue.lua's 'all' would: counted enqueued and offered, the crawl
--     reopened); the filter already answers seen for it, so it is not
--     asked again.
-- Seeds leased, or queued at their level already, are not sent.
-- KEYS: queues (the prefix), ready, stats, lengths, refill, done flag
-- ARGV: '1' to put the new entries at the front of their lists
--   (depth-first order), '0' at the back; then per seed three values: its
--   old list's suffix ("host", or "host level"; '' when it waits
--   nowhere), its old element as read ('' likewise), and its new
--   back-of-queue entry ("host[ level]\nparent\nelement")
-- Reply: per seed, 1 moved, 2 queued again, 0 its old element gone (a
--   pop took it: only when called outside the transaction)
local Q = fr_keys(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
Q.lifo = ARGV[1] == '1'
local reply, entries, again = {}, {}, 0
for i = 2, #ARGV, 3 do
  local old, el, entry = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local r = 2
  if old ~= '' then
    r = redis.call('LREM', Q.queues .. old, 1, el)
    if r == 1 then -- the old element leaves the counts; the new comes in below
      redis.call('HINCRBY', Q.lengths, string.match(old, '^[^ ]+'), -1)
      fr_count(Q, -1)
    end
  else
    again = again + 1
  end
  if r > 0 then entries[#entries + 1] = entry end
  reply[#reply + 1] = r
end
fr_push_back(Q, entries, fr_now())
if again > 0 then
  redis.call('HINCRBY', KEYS[3], 'enqueued', again)
  redis.call('HINCRBY', KEYS[3], 'offered', again)
  redis.call('DEL', KEYS[6])
end
return reply
