-- contract.lua: generated from frontier/contract.go by 'go generate'; do
-- not edit. What Go and the scripts agree on by place, declared once in Go.
-- (Flat tables: a script's tables are made anew at each call, and each
-- costs Redis its allocation and its collection.)

-- EX_KEYS names exchange.lua's keys after the Bloom filter's,
-- in the order Go sends them. EX_KINDS says what those with a kind hold (the
-- others: a string, or a prefix).
local EX_KEYS = {'queues', 'ready', 'leases', 'stats', 'failed', 'results', 'done', 'counter', 'config', 'hostpages', 'lengths', 'ended', 'buckets', 'slowed', 'outbox', 'due', 'refill', 'capped', 'deferred', 'paused', 'hostrules', 'settings', 'grants', 'refunds', 'fresh'}
local EX_KINDS = {ready = 'zset', leases = 'zset', stats = 'hash', failed = 'list', results = 'stream', hostpages = 'hash', lengths = 'hash', slowed = 'hash', outbox = 'hash', due = 'zset', refill = 'zset', capped = 'hash', deferred = 'zset', hostrules = 'hash', settings = 'string', fresh = 'hash'}

-- SC_KEYS names the sweep's keys after the fence's KEYS[1] (schedule.lua, schedule_end.lua),
-- in the order Go sends them.
local SC_KEYS = {'queues', 'ready', 'leases', 'deferred', 'failed', 'stats', 'done', 'workers', 'config', 'results', 'lengths', 'outbox', 'due', 'workerinfo', 'refill', 'sweeps', 'settings', 'samples'}

-- A finished page's numbers, by place (doneArgs; absent trailing ones are
-- 0): read as f[EX_STAT] and so on.
local EX_LEASE, EX_STAT, EX_RECORD, EX_VISIT, EX_DUE, EX_FLAGS, EX_FAILED, EX_MS, EX_COUNTED, EX_GRANT, EX_PUT, EX_AFTER, EX_ADDR = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13

-- The flags of a finished page (f[EX_FLAGS]), each a power of two: flag is
-- set in flags when flags % (2 * flag) >= flag.
local EX_FETCHED, EX_REFUND, EX_AWAY, EX_DEFERRED, EX_REQUEUED = 1, 2, 4, 8, 16
