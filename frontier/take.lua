-- requires: exchange_take
-- take.lua: the third of an exchange's scripts, in the same pipeline after
-- handout.lua, in one atomic call: the URLs handout.lua granted (hosts,
-- how many URLs each, each URL's token taken there) taken off the front of
-- their hosts' queues and put under fresh leases; the queues of hosts
-- that had their pages, or are blocked, dropped; hosts whose queues ran
-- dry out of ready.
--
-- It runs only where Redis holds the count of the process's exchanges that
-- exchange.lua left (expect), as handout.lua does, and takes only what
-- handout.lua granted under that count (the process's grants key). What
-- may run between the two: any other client's calls. A grant relies on
-- nothing else: a host granted keeps its tokens whoever pops its queue in
-- between (another process's take may leave this one fewer URLs: the
-- rest of the tokens stay spent), the budget is counted again here
-- (ex_take_room), and a host granted its whole queue stays in ready until
-- this call finds the queue dry, so that a pipeline cut between the two
-- strands no URL.
--
-- KEYS: EX_KEYS (contract.lua), as exchange.lua's after the Bloom
--   filter's (it reads queues, ready, leases, stats, failed, results,
--   counter, config, lengths, refill, hostrules, grants).
-- ARGV: one JSON object, exchangeArgs (exchangeargs.go), by name, then the
--   texts it names:
--   expect      the process's exchanges Redis should hold: exchange.lua's
--               count, after it
--   instance    the crawl's instance the caller read (fr_ours)
--   lease_ms    a new lease's time
--   budget      pages for the whole crawl (0: none; -1: this shard's share)
--   results_cap the results streams' cap (a blocked host's URLs end with
--               records)
--   lane        the lane popped from (the ready set hosts leave)
--   ids         text: the first of the lease ids, one for each URL that may
--               be taken, the others in the texts after it
-- Reply: {0, n} when Redis's count of the process's exchanges is n, not
-- expect (nothing written); or 1, then the URLs taken: host, item-json,
-- host, item-json …, the i-th under the i-th lease id, each host's in the
-- order of its grant's tokens; or the GONE error, with nothing written,
-- when the crawl is gone.
local K, A, refused = ex_after()      -- keys and arguments, or the refusal (exchange_call.lua)
if refused then return refused end
local C = ex_call(K, A, 1)               -- the call: keys, arguments, clock
local G = ex_granted(C)                  -- what handout.lua granted this exchange
local got = ex_take(C, G, ex_take_room(C, G.n)) -- off the queues, within the budget
ex_lease(C, got)                         -- under fresh leases
local reply = {1}
for _, v in ipairs(got) do reply[#reply + 1] = v end
return reply
