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
-- KEYS: EX_KEYS (contract.lua), exchange.lua's after the Bloom filter's,
--   by name (each declared in frontier/keyspace/keys.go).
-- ARGV: one JSON object read by name, then the texts it names:
--   exchangeArgs, declared once in frontier/exchangeargs.go (ids: the
--   first of the lease ids, one for each URL that may be taken).
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
ex_lease(C, G, got)                      -- under fresh leases, holding their hosts' slots
local reply = {1}
for _, v in ipairs(got) do reply[#reply + 1] = v end
return reply
