-- requires: pushback
-- move.lua: a URL already queued takes the place its
-- seed asks for: its old element off its list and the new entry pushed, in
-- one step, so that the URL is queued once whatever runs between the
-- caller's read of the list and this call (a pop that took it: nothing is
-- pushed, the pop has it; a crash: either both happened or neither).
-- KEYS: queues (the prefix), ready, stats, lengths, refill
-- ARGV: old list (its suffix: "host", or "host level"), old element, the
--   new back-of-queue entry ("host[ level]\nparent\nelement"), '1' to put
--   it at the front of its list (depth-first order), '0' at the back
-- Reply: 1 moved, 0 gone (popped since the caller read the list)
local Q = fr_keys(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
local old, el, entry = ARGV[1], ARGV[2], ARGV[3]
Q.lifo = ARGV[4] == '1'
if redis.call('LREM', Q.queues .. old, 1, el) == 0 then return 0 end
local host = string.match(old, '^[^ ]+')
-- The old element leaves the counts, the new one comes into them.
redis.call('HINCRBY', Q.lengths, host, -1)
fr_count(Q, -1)
fr_push_back(Q, {entry}, fr_now())
return 1
