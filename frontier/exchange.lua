-- exchange.lua (dedup's bloom.lua, lib.lua, politeness's tokens.lua, then
-- this): all a worker process has to say to the frontier, in one atomic
-- call:
--   1. the links of the pages it finished: marked seen, the new ones queued;
--   2. those pages' leases ended: results recorded, counters bumped;
--   3. leases it gives back unused (a stopping worker's prefetched URLs);
--   4. up to W new URLs popped under fresh leases, each with a token of its
--      host's bucket.
-- Links are queued in the same step as their page's lease ends, so a crash
-- can never lose them. A lost lease (expired and reclaimed: the URL is
-- queued again and will produce its own result) records and counts nothing.
--
-- Before any write, a guard refuses the call when the crawl is gone (its
-- config deleted by a reset, or the crawl under its name another instance
-- than the caller's: lib.lua's fr_ours) or when Redis went back in time: each worker
-- process counts its exchanges and so does Redis, in the process's own
-- key; a call that finds Redis's count unequal to the process's is refused
-- with Redis's count, and the process forgets what its lost exchanges
-- taught it (frontier/doc.go).
--
-- KEYS: the Bloom filter's, then
--   queues (the prefix of the hosts' queues, lib.lua), ready (zset host ->
--   its bucket's tat, ms: tokens.lua), leases (zset
--   "id\nhost\nitem-json" -> expiry ms), stats,
--   failed, results, done flag, the process's exchange counter, the config,
--   hostpages (hash host -> pages fetched, kept with a per-host cap),
--   lengths (hash host -> URLs queued, lib.lua),
--   ended (the lease ids this process's last exchange to end leases
--   ended, space-separated, kept a day),
--   buckets (the prefix of the hosts' bucket hashes: buckets .. host:
--   pauses, Crawl-delays, adaptive intervals; tokens.lua),
--   slowed (hash: the hosts whose bucket hashes hold something to read),
--   outbox (hash id -> "ms\npages-json\nlinks-json": the records of pages
--   whose links to other shards' hosts went in calls of their own, kept
--   until those calls are known to have gone through; see "outbox" below),
--   due (zset "host\nelement\nvisit" -> when the URL's revisit is due,
--   ms: frontier/visit.go), refill (lib.lua), capped (hash: the hosts
--   whose pages reached the cap -> their count, so that a pop reads the
--   cap's state only once some host reached it)
-- ARGV: the Bloom filter's, then one entry ("host\nparent\nelement", lib.lua)
--   per link, then one JSON object, exchangeArgs (exchange.go), by name,
--   then the texts it names: a field marked "text" holds the place
--   (1-based) of a string among those after the object (they are JSON
--   themselves, and travel unescaped):
--   expect      the process's exchanges Redis should hold
--   count       true: this call counts as one (the batch's last call)
--   want        URLs wanted
--   results_cap, failed_cap, lease_ms
--   rate, burst  each host's token bucket (absent rate: no limit, but a
--               host's pause and own delay still hold), pause_keep_ms,
--               delay_keep_ms (how long a bucket keeps those: tokens.lua)
--   factor, max_delay_ms  adaptive politeness: a finished page's fetch
--               time (its ms) times factor, at most max_delay_ms, becomes
--               its host's interval (the bucket's adapt)
--   ahead_ms    the horizon: a host whose next token's window opens
--               within it is popped, its token reserved, and its URL
--               fetched in that window (tokens.lua's tb_window)
--   least_ms    the least window a token is good for (tb_window)
--   budget      pages for the whole crawl (0: none; -1: this shard's share,
--               the field 'allow' of its stats; pops stop where pages
--               fetched + URLs in flight reach it, and pages are reported)
--   host_max    pages per host (0: none): a host that reached it has its
--               queued URLs dropped when it comes up for a pop, and counted
--               in stats as skipped_links:max_pages_per_host
--   done        the finished leases, each an array of numbers by place
--               (doneArgs, exchange.go), absent trailing ones 0; a "text"
--               is the place of a string among those after the object, 0
--               for none:
--                 1 lease    text: its member
--                 2 stat     text: the stats fields to bump, comma-separated
--                 3 record   text: its record
--                 4 links    its links in this call, which follow the
--                            previous page's
--                 5 visit    text: the due set's member its fetch leaves
--                            for the next one (the sweep took the one it
--                            was fetched with out), due in
--                 6 due      ms from now
--                 7 flags    1: a page was fetched; 2: no request went to
--                            its host, whose token goes back; 4: it has
--                            links to other shards' hosts, offered there
--                            in the same pipeline, and its record waits in
--                            this call's outbox entry until those offers
--                            are acked
--                 8 failed   text: its failed-list entry
--                 9 ms       its fetch's time (with a factor)
--                10 counted  its new links that earlier calls of the
--                            batch counted
--                11 grant    with flags 2: its token's slot (µs,
--                            Redis's clock: the pop's now_us plus its
--                            slot); 0, unknown: the token stays taken
--   outbox_id   this call's outbox entry, written when a page with away
--               links is recorded; outbox (text: those links, JSON, for
--               the scheduler to offer again should no ack come)
--   acks        outbox entries whose offers went through, each {id, extra
--               (per page of that call, by its place: the new links the
--               offers found)}: their records are added to the results
--               stream, their new_links counting the offers' too, and the
--               entries deleted; an entry gone already (acked by the
--               scheduler) is skipped
--   back        texts: the members of the leases given back
--   back_grants the slots of their tokens, by place (µs, Redis's clock;
--               0: unknown, the token stays taken), as done's grant
--   ids         text: the first of want lease ids, one for each URL that
--               may be popped, the others in the texts after it
--   (an absent list is empty)
-- Reply: the Bloom reply {BLOOM_OK, count, layers, flag per link} (or a
-- retry status with nothing done, or {BLOOM_REFUSED, count, layers, n}: n
-- is Redis's count of the process's exchanges), then one JSON object:
--   held    a digit a finished lease: 1, it was still held and the page is
--           recorded; 2, this exchange, sent before, recorded it already;
--           0, the lease was lost
--   pages   pages fetched (with a budget), done (1: the crawl is over),
--   wait    ms until some host is due within the window when fewer than
--           want were popped (-1: nothing queued)
--   now_us  Redis's time of the pop (µs, a string; absent when nothing
--           was popped), from which the three lists below count
--   slot    per popped URL, in order, µs from now_us to its token's slot
--           (absent: no URL popped has a token, the host having no limit)
--   from, until  per popped URL, µs from now_us to when its token's
--           window opens and closes (tb_window): its request may go from
--           from until before until (until -1: no token, no end)
--   delays  host -> ms: the popped hosts whose own delay the pop kept to
--   fresh   host -> tat: the popped hosts without a delay whose bucket
--           was full (held no grant) before this pop, each with the tat the
--           pop left (ms, a string): hostdelay.lua lets such a URL go when
--           its host's delay is learnt, if no grant came since
-- and then popped: host, item-json, host, item-json …, the i-th under
-- the i-th lease id (left out of the object: the items are JSON already)
-- or the GONE error, with nothing written, when the crawl is gone.
-- bloom_run returns where this script's own keys start (key0), where the
-- links' entries start in ARGV (link0) and how many links there are.
local A, T -- the arguments, decoded by the guard, and where their texts start

-- unsound is why the call cannot run to its end, found before its first
-- write (nil: none): Redis does not undo a script's writes when it fails
-- half-way, and a failure after the exchange counter's INCR and the Bloom
-- filter's bits would lose the links and URLs written so far. It reads
-- the numbers the crawl's end and budget rest on (the counter, stats'
-- queued, pages, allow: a number set by hand is repaired by hand, not
-- guessed), and, at a process's first exchange, that each of its keys
-- is of its kind (or absent), and where Redis can say (7.0:
-- redis.acl_check_cmd) whether the user may run every command an
-- exchange may run, on its keys. (A key changed later, mid-crawl, fails
-- the call where it is used: the worker stops then too, ErrScript.)
local function unsound(key0, first)
  local counter = KEYS[key0 + 7]
  local n = redis.call('GET', counter)
  if n and not string.find(n, '^%d+$') then
    return 'CORRUPT ' .. counter .. ' holds ' .. string.format('%q', string.sub(n, 1, 64)) .. ', not a whole number'
  end
  local stats = KEYS[key0 + 3]
  local why = fr_unsound_stats(stats)
  if why then return why end
  if not first then return nil end
  for off, kind in pairs({[1] = 'zset', [2] = 'zset', [3] = 'hash', [4] = 'list', [5] = 'stream', [9] = 'hash',
    [10] = 'hash', [13] = 'hash', [14] = 'hash', [15] = 'zset', [16] = 'zset', [17] = 'hash'}) do
    local t = redis.call('TYPE', KEYS[key0 + off])
    if type(t) == 'table' then t = t.ok end
    if t ~= 'none' and t ~= kind then
      return 'CORRUPT ' .. KEYS[key0 + off] .. ' is a ' .. t .. ', not a ' .. kind
    end
  end
  local q = KEYS[key0] .. 'x' -- a queue: the queues share their prefix
  return fr_denied({
    {'SETRANGE', KEYS[1], '0', 'x'}, {'INCR', counter}, {'PEXPIRE', counter, '1'},
    {'HINCRBY', stats, 'x', '1'}, {'HSET', stats, 'x', '1'}, {'HDEL', KEYS[key0 + 10], 'x'},
    {'LPOP', q, '1'}, {'LPUSH', q, 'x'}, {'RPUSH', q, 'x'}, {'LPUSHX', q, 'x'},
    {'ZADD', KEYS[key0 + 1], '1', 'x'}, {'ZADD', KEYS[key0 + 2], '1', 'x'}, {'ZREM', KEYS[key0 + 2], 'x'},
    {'LPUSH', KEYS[key0 + 4], 'x'}, {'LTRIM', KEYS[key0 + 4], '0', '1'},
    {'XADD', KEYS[key0 + 5], '*', 'x', 'x'}, {'SET', KEYS[key0 + 6], '1'}, {'SET', KEYS[key0 + 11], 'x'},
    {'HSET', KEYS[key0 + 14], 'x', 'x'}, {'ZADD', KEYS[key0 + 15], '1', 'x'},
    {'PUBLISH', KEYS[key0] .. 'wake', '1'},
  })
end

local function guard(key0, link0, links)
  A = cjson.decode(ARGV[link0 + links])
  T = link0 + links -- text n is ARGV[T + n]
  if not fr_ours(KEYS[key0 + 8], A.instance) then return 'gone' end
  local why = unsound(key0, A.expect == 0)
  if why then return why end
  local held = tonumber(redis.call('GET', KEYS[key0 + 7]) or '0')
  if held ~= A.expect then return held end
end
local reply, key0, link0, links = bloom_run(1, 1, guard)
if reply[1] == BLOOM_REFUSED and reply[4] == 'gone' then
  return redis.error_reply('GONE the crawl is gone from Redis')
end
if reply[1] == BLOOM_REFUSED and type(reply[4]) == 'string' then
  return redis.error_reply(reply[4]) -- CORRUPT, NOPERM: nothing written
end
if reply[1] ~= BLOOM_OK then return reply end
local queues, ready, leases = KEYS[key0], KEYS[key0 + 1], KEYS[key0 + 2]
local stats, failed, results, doneKey = KEYS[key0 + 3], KEYS[key0 + 4], KEYS[key0 + 5], KEYS[key0 + 6]
if A.count then
  redis.call('INCR', KEYS[key0 + 7])
  redis.call('PEXPIRE', KEYS[key0 + 7], '86400000') -- a day: a process silent longer only forgets once more
end
local finished, given = A.done or {}, A.back or {}
local D, R, W = #finished, #given, A.want or 0
local resultsCap, failedCap = string.format('%d', A.results_cap or 0), A.failed_cap or 0
local leaseMs, budget = A.lease_ms or 0, A.budget or 0
local limited = budget ~= 0
if budget < 0 then budget = tonumber(redis.call('HGET', KEYS[key0 + 3], 'allow') or '0') end
local hostMax, hostpages, cappedKey = A.host_max or 0, KEYS[key0 + 9], KEYS[key0 + 17]
local Q = fr_keys(queues, ready, stats, KEYS[key0 + 10], KEYS[key0 + 16])
Q.failed = failed -- a queue's elements not well formed go there (fr_set_aside)
local now, nowus = fr_now(), tb_now()
local nowS = fr_int(now)
local bump = {}                 -- stats field -> increment, written once each
local buckets, slowed, rate, burst = KEYS[key0 + 12], KEYS[key0 + 13], A.rate or 0, A.burst or 1
local pauseKeep, delayKeep = A.pause_keep_ms or 0, A.delay_keep_ms or 0

-- hostRate is host's rate and burst by bucket b: the crawl's, or the
-- slower of its own delay (Crawl-delay) and its adaptive interval when
-- that is slower (0: no limit).
local function hostRate(b)
  local interval = math.max(b.delay, b.adapt)
  if interval > 0 and (rate == 0 or 1000 / interval < rate) then return 1000 / interval, 1 end
  return rate, burst
end

-- The bucket hash of a host not marked in slowed: nothing but the tat its
-- ready score holds (tokens.lua).
local NONE = {delay = 0, adapt = 0, paused_until = 0, pauses = 0}

-- bucketOf reads host's bucket hash (tb_read); a field that is not a
-- number is deleted (it reads as absent: the crawl's rate holds), and
-- counted (stats 'corrupt').
local function bucketOf(host)
  local b = tb_read(buckets .. host)
  if b.bad then
    redis.call('HDEL', buckets .. host, unpack(b.bad))
    redis.call('HINCRBY', stats, 'corrupt', fr_int(#b.bad))
  end
  return b
end

-- pausedTat is the least tat bucket b may have: one whose first token
-- comes when its pause ends (0: not paused).
local function pausedTat(b, r, size)
  if b.paused_until == 0 then return 0 end
  return math.ceil(b.paused_until / 1000) + (size - 1) * 1000 / r
end

-- 1. links
local fresh = {}
for i = 1, links do
  if reply[3 + i] == 1 then fresh[#fresh + 1] = ARGV[link0 + i - 1] end
end
fr_push_back(Q, fresh, now)
if #fresh > 0 then bump.enqueued = #fresh end
if links > 0 then bump.offered = links end

-- refunds: host -> the slots of its tokens that made no request (µs, by
-- Redis's clock), from finished and returned leases: they go back after
-- both (3b.)
local refunds = {}
local function refund(id, grant)
  if grant > 0 then
    local host = fr_second(id)
    local grants = refunds[host] or {}
    grants[#grants + 1] = grant
    refunds[host] = grants
  end
end
-- 2. finished leases: one ZMSCORE tells which are still held
local answer = {} -- a digit a finished lease (the reply's held)
local parked = {} -- records that wait in this call's outbox entry: {d, r, n}
local outbox = KEYS[key0 + 14]
if D > 0 then
  local ids = {}
  for d = 1, D do ids[d] = ARGV[T + finished[d][1]] end
  local held = redis.call('ZMSCORE', leases, unpack(ids))
  -- A lease not held may have been ended by this very exchange sent
  -- before (its reply lost): then it is answered as recorded (2), and
  -- nothing is recorded twice. A process's calls are one at a time, so
  -- that is its last exchange to end leases, whose ids it kept (ended).
  local endedKey = KEYS[key0 + 11]
  local lease_ids, again = {}, {}
  for d = 1, D do lease_ids[d] = fr_head(ids[d]) end
  for d = 1, D do
    if not held[d] then
      local last = ' ' .. (redis.call('GET', endedKey) or '') .. ' '
      for e = 1, D do again[e] = string.find(last, ' ' .. lease_ids[e] .. ' ', 1, true) end
      break
    end
  end
  local gone, failures, ended, adapts = {}, {}, {}, {}
  local dueArgs, stats_ = {}, {} -- stats_: a stat's text -> the pages recorded with it
  local link = 1 -- the first link of the next page among this call's
  for d = 1, D do
    local f = finished[d]
    local stat, record, nlinks, visit, flags = f[2] or 0, f[3] or 0, f[4] or 0, f[5] or 0, f[7] or 0
    local from = link
    link = link + nlinks
    if not held[d] and again[d] then
      answer[d] = '2'
      ended[#ended + 1] = lease_ids[d] -- for this call sent yet again
    elseif held[d] then
      ended[#ended + 1] = lease_ids[d]
      gone[#gone + 1] = ids[d]
      if stat > 0 then stats_[stat] = (stats_[stat] or 0) + 1 end
      if flags % 2 == 1 then -- a page was fetched
        bump.pages = (bump.pages or 0) + 1
        if hostMax > 0 then
          local host = fr_second(ids[d])
          local n = redis.call('HINCRBY', hostpages, host, '1')
          if n >= hostMax then redis.call('HSET', cappedKey, host, fr_int(n)) end
        end
      end
      if record > 0 then
        record = ARGV[T + record]
        local new = f[10] or 0
        for i = from, link - 1 do
          if reply[3 + i] == 1 then new = new + 1 end
        end
        if flags % 8 >= 4 and A.outbox_id then
          parked[#parked + 1] = {d = d, r = record, n = new}
        else
          redis.call('XADD', results, 'MAXLEN', '~', resultsCap, '*', 'rec', record, 'new_links', fr_int(new))
          bump.records = (bump.records or 0) + 1 -- ever added: minus the stream's length, what trimming dropped
        end
      end
      if (f[8] or 0) > 0 then failures[#failures + 1] = ARGV[T + f[8]] end
      if visit > 0 then -- the URL's state for its next fetch (frontier/visit.go)
        dueArgs[#dueArgs + 1] = fr_int(now + (f[6] or 0))
        dueArgs[#dueArgs + 1] = ARGV[T + visit]
      end
      if flags % 4 >= 2 then refund(ids[d], f[11] or 0) end
      local ms = f[9] or 0
      if ms > 0 and A.factor then -- adaptive politeness: the host's last fetch sets its interval
        adapts[fr_second(ids[d])] = math.min(math.floor(A.factor * ms), A.max_delay_ms or 60000)
      end
      answer[d] = '1'
    else
      answer[d] = '0'
    end
  end
  for text, n in pairs(stats_) do
    for stat in string.gmatch(ARGV[T + text], '[^,]+') do -- "ok,status:200"
      bump[stat] = (bump[stat] or 0) + n
    end
  end
  if #gone > 0 then redis.call('ZREM', leases, unpack(gone)) end
  if #ended > 0 then redis.call('SET', endedKey, table.concat(ended, ' '), 'PX', '86400000') end
  if #dueArgs > 0 then redis.call('ZADD', KEYS[key0 + 15], unpack(dueArgs)) end
  if #failures > 0 then
    redis.call('LPUSH', failed, unpack(failures))
    redis.call('LTRIM', failed, 0, string.format('%d', failedCap - 1))
  end
  -- A host's adaptive interval counts from its last response: its bucket
  -- has no token before then (its tat moves there, never back).
  local later = {}
  for host, ms in pairs(adapts) do
    local key = buckets .. host
    redis.call('HSET', key, 'adapt', fr_int(ms))
    if redis.call('PTTL', key) < pauseKeep then redis.call('PEXPIRE', key, fr_int(pauseKeep)) end
    redis.call('HSET', slowed, host, '1')
    later[#later + 1] = fr_int(now + ms)
    later[#later + 1] = host
  end
  if #later > 0 then redis.call('ZADD', ready, 'GT', unpack(later)) end
end

-- The transactional outbox: a page's links to other shards' hosts are
-- offered there by calls of their own, in the same pipeline but not in
-- this atomic step, so its record waits here, with those links, until the
-- worker acks the entry (the offers went through) or the scheduler offers
-- the links again itself: a crash between the calls loses nothing.
if #parked > 0 then
  local links = '[]'
  if A.outbox then links = ARGV[T + A.outbox] end
  redis.call('HSET', outbox, A.outbox_id, string.format('%d', now) .. '\n' .. cjson.encode(parked) .. '\n' .. links)
end
local acked = 0
for _, ack in ipairs(A.acks or {}) do
  local entry = redis.call('HGET', outbox, ack.id)
  if entry then
    acked = acked + 1
    local pages = cjson.decode(string.match(entry, '^%d+\n([^\n]*)'))
    local extra = ack.extra or {}
    for _, p in ipairs(pages) do
      redis.call('XADD', results, 'MAXLEN', '~', resultsCap, '*', 'rec', p.r, 'new_links', string.format('%d', p.n + (extra[p.d] or 0)))
    end
    bump.records = (bump.records or 0) + #pages
    redis.call('HDEL', outbox, ack.id)
  end
end

-- 3. returned leases go back to the front of their hosts' queues, and
-- their tokens, unused, to their buckets (3b.)
if R > 0 then
  local ids, grants = {}, A.back_grants or {}
  for r = 1, R do ids[r] = ARGV[T + given[r]] end
  local held = redis.call('ZMSCORE', leases, unpack(ids))
  local back, gone = {}, {}
  for r = 1, R do
    if held[r] then
      local _, entry = fr_split(ids[r])
      back[#back + 1] = entry
      gone[#gone + 1] = ids[r]
      refund(ids[r], grants[r] or 0)
    end
  end
  if #gone > 0 then
    redis.call('ZREM', leases, unpack(gone))
    fr_push_front(Q, back, now)
  end
end

-- 3b. The tokens of URLs that made no request (disallowed by robots.txt,
-- skipped, given back unused) go back to their hosts' buckets, so that
-- such a URL does not cost its host an interval: its tat moves back an
-- interval a token, never before a pause's end. Only a host's last token
-- can go back: once a later one was taken (reserved ahead, its URL in
-- some worker), the tat is that one's, and moving it back would give the
-- host's next URL the later token's time too, two requests at once. The
-- last, latest first: a grant whose interval reaches the tat. A host not
-- in ready has a full bucket.
for host, grants in pairs(refunds) do
  local tat = redis.call('ZSCORE', ready, host)
  if tat then
    tat = tonumber(tat)
    local b = NONE
    if redis.call('HEXISTS', slowed, host) == 1 then b = bucketOf(host) end
    local r, size = hostRate(b)
    if r > 0 then
      local interval, was = 1000 / r, tat
      table.sort(grants, function(x, y) return x > y end)
      for _, g in ipairs(grants) do
        if tat > g / 1000 + interval + 0.002 then break end -- µs to ms; the slots travel rounded to the µs
        tat = tat - interval
      end
      tat = math.max(tat, pausedTat(b, r, size))
      if tat < was then redis.call('ZADD', ready, 'XX', fr_tat(tat), host) end
    end
  end
end

for field, by in pairs(bump) do
  redis.call('HINCRBY', stats, field, fr_int(by))
end

-- 4. pop: up to W URLs of hosts that are due, shared out among them, each
-- URL with a token of its host's bucket (tokens.lua), taken here: a host
-- whose bucket is empty or paused is due when it next has a token, and is
-- not offered before. A due host's turn moves behind the others'.
-- A token is a window of time (tokens.lua's tb_window): its slot, an
-- interval after the host's last, and from a little before the slot to a
-- little after it, the time its request may go. A host whose next
-- token's window opens by the horizon (ahead_ms from now) counts as due:
-- its tokens are reserved, and the worker fetches each URL in its window,
-- so that calls may be ahead_ms apart without a token coming too late.
local got = {}      -- host, json, host, json, ...
local pages, done, wait = 0, 0, 0
if limited then
  -- The budget holds for the whole crawl, exactly: a URL in flight may
  -- still become a page, so it counts against the budget already.
  pages = tonumber(redis.call('HGET', stats, 'pages') or '0')
  local room = budget - pages - redis.call('ZCARD', leases)
  if room <= 0 and W > 0 then wait = -1 end -- nothing to pop until a page ends: back off
  W = math.max(0, math.min(W, room))
end
local queued -- URLs in the queues after the pop, when it looked
local delays = {} -- popped host -> its own delay, ms, when the pop kept to one
local firsts = {} -- popped host without a delay whose bucket held no grant before -> the tat the pop left (reply's fresh)
local slots, froms, untils, tokened = {}, {}, {}, false -- per popped URL: its token's slot and window (µs from nowus); any token at all
local ahead, least = A.ahead_ms or 0, A.least_ms or 0
local tnow = nowus / 1000 -- now, ms with a fraction: the tokens' clock
local horizon = tnow + ahead
if W > 0 then
  -- A host's ready score is its bucket's tat (tokens.lua): the time the
  -- bucket is full again, with a burst of 1 the time its next token comes.
  -- A host whose bucket has a token by the horizon is due, and taking
  -- tokens is the ZADD that moves its score, so a polite pop costs no
  -- call a host for its bucket. Only hosts marked in slowed (a pause, a
  -- Crawl-delay, an adaptive interval) have a bucket hash worth reading:
  -- one HMGET of slowed a round tells which, and none when slowed is empty.
  local reach = horizon -- a host whose tat is by reach has a token whose window opens by the horizon
  if rate > 0 then reach = horizon + tb_window(rate, burst, least) end
  local anySlowed = redis.call('EXISTS', slowed) == 1
  local marks, visited = {}, {}
  -- tokens: how many URLs host may have (at most q), given the tat its
  -- score holds: that many, its bucket, its rate and burst (rate 0: no
  -- limit), and its first token's slot; or 0 and the host's tat, raised
  -- when a pause holds it past its score. The slots come an interval
  -- apart from the tat (or now, when the bucket is full); the host has as
  -- many tokens as have windows that open by the horizon (tb_window).
  local function tokens(host, q, tat)
    local b = NONE
    if marks[host] then
      b = bucketOf(host)
      if b.delay == 0 and b.adapt == 0 and nowus >= b.paused_until and (b.pauses == 0 or rate == 0) then
        redis.call('HDEL', slowed, host) -- nothing left to read (without a rate no grant halves pauses)
      end
    end
    local r, size = hostRate(b)
    if nowus < b.paused_until then
      if r == 0 then return 0, math.max(tat, math.ceil(b.paused_until / 1000), horizon + 1) end
      return 0, math.max(tat, math.ceil(pausedTat(b, r, size)))
    end
    if r == 0 then return q, b, 0, 1, 0 end -- no limit: nothing to take
    local first, early = math.max(tat, tnow), tb_window(r, size, least)
    local n = math.floor((horizon + early - first) * r / 1000) + 1
    if n < 1 then return 0, tat end
    return math.min(q, n), b, r, size, first
  end
  local readyAdd, refillAdd = {}, {}
  local taken = 0
  -- Hosts that reached the cap of pages are marked in capped when their
  -- count crosses it: while none has, a round reads nothing for the cap.
  local anyCapped = hostMax > 0 and redis.call('EXISTS', cappedKey) == 1
  for _ = 1, 4 do
    local m = W - #got / 2
    if m <= 0 then break end
    local due = redis.call('ZRANGEBYSCORE', ready, '-inf', fr_tat(reach), 'WITHSCORES', 'LIMIT', '0', fr_int(m))
    if #due == 0 then break end
    local capped = {} -- with a cap of pages per host: the hosts that reached it
    if anySlowed or anyCapped then
      local hosts = {}
      for i = 1, #due, 2 do hosts[#hosts + 1] = due[i] end
      if anySlowed then
        local v = redis.call('HMGET', slowed, unpack(hosts))
        for i, host in ipairs(hosts) do marks[host] = v[i] end
      end
      if anyCapped then
        local v = redis.call('HMGET', cappedKey, unpack(hosts))
        for i, host in ipairs(hosts) do capped[host] = v[i] and tonumber(v[i]) >= hostMax end
      end
    end
    if #due > 2 then
      -- The longest queues go first: when fewer URLs are wanted than the
      -- round's hosts could give, those that lose are the ones with the
      -- least left, so that the hosts drain together rather than a few
      -- being left, late in the crawl, with URLs that come one an
      -- interval while loops wait. (Ties keep the tat order.)
      local hosts = {}
      for i = 1, #due, 2 do hosts[#hosts + 1] = due[i] end
      local lens = redis.call('HMGET', Q.lengths, unpack(hosts))
      local order = {}
      for i = 1, #hosts do order[i] = i end
      table.sort(order, function(a, b)
        local la, lb = tonumber(lens[a] or '0'), tonumber(lens[b] or '0')
        if la ~= lb then return la > lb end
        return a < b
      end)
      local sorted = {}
      for _, i in ipairs(order) do
        sorted[#sorted + 1] = due[2 * i - 1]
        sorted[#sorted + 1] = due[2 * i]
      end
      due = sorted
    end
    local per = math.ceil(m / (#due / 2))
    local dry, moved = {}, false
    for i = 1, #due, 2 do
      local host, tat = due[i], tonumber(due[i + 1])
      local q = math.min(per, W - #got / 2)
      if q <= 0 then break end
      if visited[host] then
        -- not due: looked at already by this call
      elseif capped[host] then
        -- The host had its pages: what is queued for it is dropped, counted,
        -- a thousand elements a visit.
        local els = redis.call('LPOP', queues .. host, '1000')
        local n = 0
        for _, el in ipairs(els or {}) do
          if string.byte(el, 1) ~= FR_MARK then n = n + 1 end
        end
        if n > 0 then
          redis.call('HINCRBY', stats, 'skipped_links:max_pages_per_host', fr_int(n))
          taken = taken + n
          moved = true
        end
        if not els or #els < 1000 then
          dry[#dry + 1] = host
          redis.call('HDEL', Q.lengths, host)
        elseif n > 0 then
          redis.call('HINCRBY', Q.lengths, host, fr_int(-n))
        end
      else
        local k, b, r, size, first = tokens(host, q, tat)
        if k == 0 then
          -- No token by the horizon (a pause, a delay of its own): its
          -- score says when it has one.
          visited[host] = true
          if b ~= tat then
            readyAdd[#readyAdd + 1] = fr_tat(b)
            readyAdd[#readyAdd + 1] = host
          end
        else
          local n, gone = fr_pop(Q, host, k, got)
          taken = taken + n
          if n > 0 then
            local tat2 = tnow -- no limit: its turn moves behind the others'
            if r > 0 then
              -- The i-th URL's token: its slot, an interval after the
              -- last, and its window around it (tb_window).
              local interval, early, width = 1000 / r, tb_window(r, size, least)
              for i = 0, n - 1 do
                local slot = first + i * interval
                slots[#slots + 1] = math.floor((slot - tnow) * 1000 + 0.5)
                froms[#froms + 1] = math.ceil(math.max(0, slot - early - tnow) * 1000)
                untils[#untils + 1] = math.floor((slot - early + width - tnow) * 1000)
              end
              tokened = true
              tat2 = first + n * interval
              if b.pauses > 0 then -- a grant halves the count of pauses (pause.lua)
                redis.call('HSET', buckets .. host, 'pauses', fr_int(math.floor(b.pauses / 2)))
              end
            else
              for _ = 1, n do
                slots[#slots + 1], froms[#froms + 1], untils[#untils + 1] = 0, 0, -1
              end
            end
            if b.delay > 0 then
              delays[host] = b.delay
            elseif tat <= tnow then -- its bucket was full: no grant before this pop
              firsts[host] = fr_tat(tat2)
            end
            tat = tat2
            moved = true
          end
          if gone then
            -- Its queue ran dry: it leaves ready, for refill while its
            -- bucket is still filling (a URL queued for it brings it back
            -- with that tat), or for good when the bucket is full.
            dry[#dry + 1] = host
            if tat > tnow then
              refillAdd[#refillAdd + 1] = fr_tat(tat)
              refillAdd[#refillAdd + 1] = host
            end
          elseif n > 0 then
            readyAdd[#readyAdd + 1] = fr_tat(tat)
            readyAdd[#readyAdd + 1] = host
          end
        end
      end
    end
    if #dry > 0 then redis.call('ZREM', ready, unpack(dry)) end
    if #readyAdd > 0 then
      redis.call('ZADD', ready, unpack(readyAdd))
      readyAdd = {}
    end
    if not moved and #dry == 0 then break end
  end
  if #refillAdd > 0 then redis.call('ZADD', Q.refill, unpack(refillAdd)) end
  -- A bucket full again needs no entry: refill keeps only those filling.
  redis.call('ZREMRANGEBYSCORE', Q.refill, '-inf', nowS)
  if taken > 0 then queued = fr_count(Q, -taken) end
  local M = #got / 2
  if M > 0 then
    local exp = {}
    local until_ = fr_int(now + leaseMs)
    for i = 1, M do
      exp[2 * i - 1] = until_
      exp[2 * i] = ARGV[T + A.ids + i - 1] .. '\n' .. got[2 * i - 1] .. '\n' .. got[2 * i]
    end
    redis.call('ZADD', leases, unpack(exp))
  end
  if M < W then
    -- (A host whose queue ran dry stays in ready until its bucket is
    -- full; with nothing queued at all, nothing is coming due.)
    queued = queued or fr_queued(Q)
    wait = -1
    if queued > 0 then
      local nxt = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
      if #nxt == 2 then wait = math.max(0, math.ceil(tonumber(nxt[2]) - reach)) end
    end
  end
  if M == 0 then done = redis.call('EXISTS', doneKey) end
end
if limited then -- a budget can end the crawl with URLs still queued
  done = redis.call('EXISTS', doneKey)
end
if (D > 0 or R > 0 or acked > 0) and redis.call('EXISTS', leases) == 0
    and ((queued or fr_queued(Q)) == 0 or (limited and pages >= budget))
    and redis.call('EXISTS', outbox) == 0 then
  -- Nothing queued (or the budget spent), nothing held, no outbox entry
  -- waiting: the crawl may be over. Tell the scheduler, so that it need
  -- not sweep often to notice.
  redis.call('PUBLISH', queues .. 'wake', 'drained')
end
local out = {held = table.concat(answer), pages = pages, done = done, wait = wait}
if next(delays) then out.delays = delays end
if tokened then
  out.slot, out.from, out['until'] = slots, froms, untils
end
if #got > 0 then out.now_us = string.format('%d', nowus) end
if next(firsts) then out.fresh = firsts end
reply[#reply + 1] = cjson.encode(out)
for _, v in ipairs(got) do reply[#reply + 1] = v end -- popped, unencoded: items are JSON already
return reply
