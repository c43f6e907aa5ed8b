-- requires: schedule_steps
-- schedule.lua (a fence.Script body: KEYS[1]/ARGV[1] are the fence): the
-- scheduler's sweep, first of its two scripts: the work that came due goes
-- back to the hosts' queues. Due deferred entries (retries) go back to the
-- front of their host's queue, as do URLs due for a revisit; entries whose
-- lease expired go back with attempts+1, or to the failed list past the
-- maximum attempts. Refused as a whole for a stale leader. Sent in one
-- pipeline with schedule_end.lua (the sweep's end), right after it: see
-- that script for what may run between the two.
-- KEYS (after the fence's KEYS[1]; named in contract.lua's SC_KEYS, the
-- same for both scripts of a sweep):
--   [2] queues      the prefix of the hosts' queues (queue.lua)
--   [3] ready       [4] leases (zset "id\nhost\nitem-json" -> expiry ms)
--   [5] deferred    [6] failed   [7] stats   [8] done flag
--   [9] workers     (zset worker -> alive until ms)
--   [10] config     the crawl's: while it is missing the crawl is gone
--                   (reset), and the sweep is refused with the GONE error
--                   before any write
--   [11] results    (stream): each URL the sweep ends gets a failed record
--                   there (frontier.SweptRecord): each whose lease expired
--                   the maximum times (here); with the page budget spent,
--                   each one still waiting for a retry (schedule_end.lua)
--   [12] lengths    (queue.lua)   [13] outbox (exchange.lua)
--   [14] due        (zset "host\nelement\nvisit" -> when the URL's revisit
--                   is due, ms): frontier/recrawl/recrawl.go
--   [15] worker info (hash worker -> its last heartbeat's note: renew.lua),
--                   whose forgotten workers go with them
--   [16] refill     (queue.lua)
--   [17] sweeps     the fence's log (stream): this sweep's epoch, ARGV[1],
--                   added once the fence let it through (frontier.Keys.Sweeps)
--   [18] settings   the settings version in force here (settings.lua)
--   [19] samples    pages waiting for a render worker (samples.lua; the
--                   first shard's only): while any waits, the crawl is
--                   not over
-- ARGV[2] (after the fence's ARGV[1], the epoch): one JSON object,
-- sweep.go's scheduleArgs, by name (this script reads all but forget_ms,
-- mode and outbox_age):
--   max_attempts   limit: most entries per sweep   failed_cap
--   budget  page budget (0: none; -1: this shard's share, stats' 'allow')
--   results_cap  the results stream's cap (XADD MAXLEN ~)
--   continuous  true: the crawl is continuous: URLs due by now go back to their
--       hosts' queues; false: only those due by a recrawl's time (stats'
--       'recrawl_at', recrawl.lua)
--   instance  the crawl's instance id as the scheduler read it (base.lua's fr_ours)
--   settings  the settings version the scheduler acts on (schedule_end.lua)
--   forget_ms, mode, outbox_age: schedule_end.lua's
-- Returns one JSON object (frontier.sweepReply reads it by name):
--   released    due deferred entries put back in the queues
--   revisits    URLs due for a revisit put back in the queues
--   reclaimed   expired leases put back, with attempts+1
--   failed      expired leases that reached the maximum attempts
--   records     the records this script wrote (absent: none), which the
--                scheduler writes to its own --out too
-- or the GONE error, with nothing written, when the crawl is gone.
local S, why = sc_begin() -- the keys and arguments named, and the guard
if not S then return redis.error_reply(why) end -- nothing written
redis.call('XADD', S.K.sweeps, 'MAXLEN', '~', '10000', '*', 'epoch', S.A.epoch) -- the fence let this epoch through
local room = sc_budget(S).room           -- 1. what the page budget leaves room for
local released = sc_release(S, room)     -- 2. due retries back to their queues
local revisits = sc_revisits(S, room - released) -- 3. due revisits back to their queues
local reclaimed, failed = sc_reclaim(S)  -- 4. expired leases back, or failed
local out = {released = released, revisits = revisits, reclaimed = reclaimed, failed = failed}
if #S.written > 0 then out.records = S.written end -- (an empty table would encode as an object)
return cjson.encode(out)
