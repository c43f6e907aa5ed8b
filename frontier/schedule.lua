-- requires: schedule_steps schedule_end
-- schedule.lua (a fence.Script body: KEYS[1]/ARGV[1] are the fence): the scheduler's sweep. Due
-- deferred entries go back to the front of their host's queue; entries
-- whose lease expired go back with attempts+1, or to the failed list past
-- the maximum attempts. Refused as a whole for a stale leader.
-- KEYS (after the fence's KEYS[1]; named in schedule_steps.lua's SC_KEYS):
--   [2] queues      the prefix of the hosts' queues (queue.lua)
--   [3] ready       [4] leases (zset "id\nhost\nitem-json" -> expiry ms)
--   [5] deferred    [6] failed   [7] stats   [8] done flag
--   [9] workers     (zset worker -> alive until ms)
--   [10] config     the crawl's: while it is missing the crawl is gone
--                   (reset), and the sweep is refused with the GONE error
--                   before any write
--   [11] results    (stream): each URL the sweep ends gets a failed record
--                   there (frontier.SweptRecord): with the page budget
--                   spent, each one still waiting for a retry; and each
--                   whose lease expired the maximum times
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
-- sweep.go's scheduleArgs, by name:
--   max_attempts   limit: most entries per sweep   failed_cap
--   budget  page budget (0: none; -1: this shard's share, stats' 'allow')
--   forget_ms  forget workers this long after they stopped being alive (ms)
--   results_cap  the results stream's cap (XADD MAXLEN ~)
--   mode: '1', this is the crawl's only shard, and the sweep decides
--       whether the crawl is done; '0', a shard of several, whose sweep
--       only reports whether it is empty (Frontier.Schedule decides, over
--       all of them); 'end', Frontier.Schedule decided the crawl is over:
--       this shard ends as a lone one would; 'finish', as 'end', but
--       without setting the done flag: done is 1 when the shard's last
--       records are all written (Frontier.Schedule then ends them all)
--   outbox_age  how old an outbox entry is before the sweep acks it (ms)
--   continuous  true: the crawl is continuous: URLs due by now go back to their
--       hosts' queues, and the crawl never ends; false: only those due by a
--       recrawl's time (stats' 'recrawl_at', recrawl.lua), and the crawl
--       ends when they are fetched
--   instance  the crawl's instance id as the scheduler read it (base.lua's fr_ours)
--   settings  the settings version the scheduler acts on: older than the
--        shard's, the sweep ends no crawl (its budget may be another now)
-- Returns one JSON object (frontier.sweepReply reads it by name):
--   released    due deferred entries put back in the queues
--   revisits    URLs due for a revisit put back in the queues
--   reclaimed   expired leases put back, with attempts+1
--   failed      expired leases that reached the maximum attempts
--   done        1 once nothing is queued, in flight or deferred (or the
--                page budget is spent and nothing is in flight) and every
--                last record is written; the flag is set in the same atomic
--                step as the check ('finish': 1 when this shard's last
--                records are written, no flag set)
--   due_in      ms until the next deferred item is due (-1: none; 0: the
--                crawl's end has more last records to write: sweep again)
--   empty       1: nothing queued, leased or deferred in this shard, and
--                no outbox entry waiting
--   outbox      the outbox entries older than outbox_age: id, entry, id, entry …
--                (absent: none)
--   enqueued    URLs ever queued at the back (a shard's work can only come
--                back through that counter)
--   pages       pages fetched in this shard
--   leases      URLs in flight in this shard
--   budget      this shard's share of the page budget (or the budget)
--   settings    the settings version in force in the shard
--   work        URLs queued or deferred in this shard
--   records     the records this sweep wrote (absent: none), which the
--                scheduler writes to its own --out too
-- or the GONE error, with nothing written, when the crawl is gone.
-- The sweep, step by step (schedule_steps.lua).
local S, why = sc_begin() -- the keys and arguments named, and the guard
if not S then return redis.error_reply(why) end -- nothing written
redis.call('XADD', S.K.sweeps, 'MAXLEN', '~', '10000', '*', 'epoch', S.A.epoch) -- the fence let this epoch through
sc_budget(S)          -- 1. what the page budget leaves room for
sc_release(S)         -- 2. due retries back to their queues
sc_revisits(S)        -- 3. due revisits back to their queues
sc_reclaim(S)         -- 4. expired leases back, or failed
sc_forget_workers(S)  -- 5. workers long gone leave the registry
sc_outbox(S)          -- 6. outbox entries no ack came for
sc_empty(S)           -- 7. is this shard empty
sc_end(S)             -- 8. is the crawl over (its last records written)
return sc_reply(S)    -- 9.
