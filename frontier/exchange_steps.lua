-- requires: contract push pop hostbucket addrs
-- exchange_steps.lua: the steps of an exchange (exchange.lua), one concern
-- each, which exchange.lua's body calls in order. They share one table,
-- the exchange X: its keys by name (X.K), its arguments (X.A, exchange.go's
-- exchangeArgs) and what the steps leave for those after them.

local EX = {} -- the exchange, made by ex_guard

-- ex_text is the exchange's text n (1-based: a field marked "text").
local function ex_text(X, n) return ARGV[X.T + n] end

-- ex_unsound is why the call cannot run to its end, found before its first
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
local function ex_unsound(K, first)
  local n = redis.call('GET', K.counter)
  if n and not string.find(n, '^%d+$') then
    return 'CORRUPT ' .. K.counter .. ' holds ' .. string.format('%q', string.sub(n, 1, 64)) .. ', not a whole number'
  end
  local why = fr_unsound_stats(K.stats)
  if why then return why end
  if not first then return nil end
  for _, name in ipairs(EX_KEYS) do
    local kind = EX_KINDS[name]
    if kind then
      local t = redis.call('TYPE', K[name])
      if type(t) == 'table' then t = t.ok end
      if t ~= 'none' and t ~= kind then
        return 'CORRUPT ' .. K[name] .. ' is a ' .. t .. ', not a ' .. kind
      end
    end
  end
  local q = K.queues .. 'x' -- a queue: the queues share their prefix
  return fr_denied({
    {'SETRANGE', KEYS[1], '0', 'x'}, {'INCR', K.counter}, {'PEXPIRE', K.counter, '1'},
    {'HINCRBY', K.stats, 'x', '1'}, {'HSET', K.stats, 'x', '1'}, {'HDEL', K.lengths, 'x'},
    {'LPOP', q, '1'}, {'LPUSH', q, 'x'}, {'RPUSH', q, 'x'}, {'LPUSHX', q, 'x'},
    {'ZADD', K.ready, '1', 'x'}, {'ZADD', K.leases, '1', 'x'}, {'ZREM', K.leases, 'x'},
    {'LPUSH', K.failed, 'x'}, {'LTRIM', K.failed, '0', '1'},
    {'XADD', K.results, '*', 'x', 'x'}, {'SET', K.done, '1'}, {'SET', K.ended, 'x'},
    {'HSET', K.outbox, 'x', 'x'}, {'ZADD', K.due, '1', 'x'},
    {'PUBLISH', K.queues .. 'wake', '1'},
  })
end

-- ex_guard decodes the arguments and refuses the call, before any write,
-- when the crawl is gone ('gone'), a key is unsound (its reason), or Redis
-- holds another count of the process's exchanges than the process (that
-- count): bloom_run's guard.
local function ex_guard(key0, link0, links)
  local K = {}
  for i, name in ipairs(EX_KEYS) do K[name] = KEYS[key0 + i - 1] end
  local A = cjson.decode(ARGV[link0 + links])
  -- Every field the steps set, in one constructor: the table is sized once.
  EX = {K = K, A = A, T = link0 + links, link0 = link0, links = links, reply = false, Q = false,
    now = 0, nowus = 0, rate = 0, burst = 1, bump = false, refunds = false, answer = false, parked = false,
    acked = 0, got = false, pages = 0, done = 0, wait = 0, W = 0, budget = 0, limited = false, queued = false,
    delays = false, firsts = false, slots = false, froms = false, untils = false, tokened = false, least = 0,
    tnow = 0, horizon = 0, reach = 0, anySlowed = false, anyCapped = false, marks = false, visited = false,
    readyAdd = false, refillAdd = false, taken = 0, paused = false, rules = false, rates = false, kept = false,
    again = false, settings = 0, stale = false, ip = false, ipk = false, ipS = 1, ipShard = 0, aT = 0, aEarly = 0,
    aWidth = 0, addrOf = false, atat = false, adirty = false, resolve = false, arefunds = false, addrOut = false}
  if not fr_ours(K.config, A.instance) then return 'gone' end
  local why = ex_unsound(K, A.expect == 0)
  if why then return why end
  local held = tonumber(redis.call('GET', K.counter) or '0')
  if held ~= A.expect then return held end
end

-- ex_begin counts the call as one more of the process's exchanges (the
-- batch's last call does) and sets out what the steps share.
local function ex_begin(reply)
  local X, K, A = EX, EX.K, EX.A
  if A.count then
    redis.call('INCR', K.counter)
    redis.call('PEXPIRE', K.counter, '86400000') -- a day: a process silent longer only forgets once more
  end
  X.reply = reply
  X.Q = fr_keys(K.queues, K.ready, K.stats, K.lengths, K.refill, K.hostrules)
  X.pready = fr_ready_of(X.Q, X.A.lane) -- the pops' lane's ready set (lane: 'render' for a worker with a browser)
  X.Q.lifo = A.lifo == true
  X.Q.failed = K.failed -- a queue's elements not well formed go there (fr_set_aside)
  X.now, X.nowus = fr_now(), tb_now()
  X.rate, X.burst = A.rate or 0, A.burst or 1
  -- The settings version in force here ('crawler set', settings.lua): a
  -- caller on older settings pops nothing (ex_again, ex_pop), and learns
  -- the version from the reply, so that no URL is handed out under
  -- settings older than the shard's.
  X.settings = tonumber(redis.call('GET', K.settings) or '0') or 0
  X.stale = (A.settings or 0) < X.settings
  X.bump = {}    -- stats field -> increment, written once each (ex_write_stats)
  X.refunds = {} -- host -> the slots of its tokens that made no request (ex_refund)
  X.arefunds = {} -- address -> the same, for tokens of an address's bucket too (addrs.lua)
  X.answer = {}  -- a digit a finished lease (the reply's held)
  X.parked = {}  -- records that wait in this call's outbox entry: {d, r, n}
  X.acked = 0
  X.got = {}     -- popped: host, json, host, json, ...
  X.pages, X.done, X.wait = 0, 0, 0
  return X
end

-- ex_add adds by to the stats field, written once at the end.
local function ex_add(X, field, by) X.bump[field] = (X.bump[field] or 0) + by end

-- ex_entry_host is the host of a back-of-queue entry ("host[ level]\n…").
local function ex_entry_host(e)
  local h = string.sub(e, 1, string.find(e, '\n', 1, true) - 1)
  local sp = string.find(h, ' ', 1, true)
  return sp and string.sub(h, 1, sp - 1) or h
end

-- ex_room is, per host of the entries, how many more it may have queued
-- under a cap of host_max pages a host: twice the cap (a queued URL may
-- fail, or redirect), less its pages and what it has queued.
local function ex_room(X, entries)
  local hosts, room = {}, {}
  for _, e in ipairs(entries) do
    local h = ex_entry_host(e)
    if not room[h] then room[h], hosts[#hosts + 1] = 0, h end
  end
  for at = 1, #hosts, 1000 do -- HMGET in parts: unpack's stack is bounded
    local part = {unpack(hosts, at, math.min(at + 999, #hosts))}
    local pages, lens = redis.call('HMGET', X.K.hostpages, unpack(part)), redis.call('HMGET', X.K.lengths, unpack(part))
    for i, h in ipairs(part) do room[h] = 2 * X.A.host_max - (tonumber(pages[i]) or 0) - (tonumber(lens[i]) or 0) end
  end
  return room
end

-- ex_cap_links keeps of the new links what a host's page cap leaves room
-- for: its queue stays under twice the cap (a sitemap index of millions of
-- URLs fills nothing past it). The rest are counted, as the pop counts a
-- capped host's (skipped_links:max_pages_per_host). (The crawl's budget
-- bounds nothing here: a raised budget reopens an ended crawl, with the
-- URLs it left queued.)
local function ex_cap_links(X, fresh)
  if #fresh == 0 or (X.A.host_max or 0) <= 0 then return fresh end
  local room, kept, dropped = ex_room(X, fresh), {}, 0
  for _, e in ipairs(fresh) do
    local h = ex_entry_host(e)
    if room[h] <= 0 then
      dropped = dropped + 1
    else
      kept[#kept + 1] = e
      room[h] = room[h] - 1
    end
  end
  if dropped > 0 then ex_add(X, 'skipped_links:max_pages_per_host', dropped) end
  return kept
end

-- 1. ex_queue_links: the links the Bloom filter found new are queued, as
-- far as a host's page cap leaves room.
local function ex_queue_links(X)
  local fresh = {}
  for i = 1, X.links do
    if X.reply[3 + i] == 1 then fresh[#fresh + 1] = ARGV[X.link0 + i - 1] end
  end
  local queued = fr_push_back(X.Q, ex_cap_links(X, fresh), X.now)
  if queued > 0 then ex_add(X, 'enqueued', queued) end
  if X.links > 0 then ex_add(X, 'offered', X.links) end
end

-- ex_refund_later notes that the token of lease id made no request: it
-- goes back to its host's bucket after the finished and given-back leases
-- (ex_refund), and to its address's (the text at place addr, 0 for none:
-- politeness per address, addrs.lua).
local function ex_refund_later(X, id, grant, addr)
  if grant > 0 then
    local host = fr_second(id)
    local grants = X.refunds[host] or {}
    grants[#grants + 1] = grant
    X.refunds[host] = grants
    if (addr or 0) > 0 then
      local a = ex_text(X, addr)
      local ag = X.arefunds[a] or {}
      ag[#ag + 1] = grant
      X.arefunds[a] = ag
    end
  end
end

-- ex_held tells which of the finished leases (ids, their members) are
-- still held (one ZMSCORE), and of those not held, which this very
-- exchange ended when it was sent before (its reply lost): a process's
-- calls are one at a time, so that is its last exchange to end leases,
-- whose ids it kept (ended). It returns held, again and the lease ids.
local function ex_held(X, ids)
  local held = redis.call('ZMSCORE', X.K.leases, unpack(ids))
  local leaseIDs, again = {}, {}
  for d = 1, #ids do leaseIDs[d] = fr_head(ids[d]) end
  for d = 1, #ids do
    if not held[d] then
      local last = ' ' .. (redis.call('GET', X.K.ended) or '') .. ' '
      for e = 1, #ids do again[e] = string.find(last, ' ' .. leaseIDs[e] .. ' ', 1, true) end
      break
    end
  end
  return held, again, leaseIDs
end

-- ex_put_later notes where lease id's URL goes back, its lease ended
-- with no page (f's flags say which): deferred until after ms (a retry),
-- or requeued at the front of its host's queue, the host held off for
-- after ms (a busy host). It goes as f's put text, or as the lease's own
-- entry (put 0).
local function ex_put_later(X, f, id, flags, acc)
  local put, entry = f[EX_PUT] or 0, nil
  if put > 0 then
    entry = ex_text(X, put)
  else
    local _, own = fr_split(id)
    entry = own
  end
  local at = X.now + (f[EX_AFTER] or 0)
  if flags % (2 * EX_DEFERRED) >= EX_DEFERRED then
    acc.deferred[#acc.deferred + 1] = fr_int(at)
    acc.deferred[#acc.deferred + 1] = entry
    return
  end
  acc.requeued[#acc.requeued + 1] = entry
  local host = fr_second(id)
  acc.holds[host] = math.max(acc.holds[host] or 0, at)
end

-- ex_record is what finished page f (the d-th, under lease id, its links
-- the call's from to to) leaves, its lease still held: a page counted
-- (and its host's, under a cap of pages a host), its record in the
-- results stream or parked in the outbox, its failure, its next visit,
-- its token's refund, its host's adaptive interval. The writes a page
-- shares with the others are gathered in acc (ex_write_finished).
local function ex_record(X, d, f, id, from, to, acc)
  local A, K, T = X.A, X.K, X.T
  local stat, record, visit, flags = f[EX_STAT] or 0, f[EX_RECORD] or 0, f[EX_VISIT] or 0, f[EX_FLAGS] or 0
  acc.gone[#acc.gone + 1] = id
  if stat > 0 then acc.stats[stat] = (acc.stats[stat] or 0) + 1 end
  if flags % (2 * EX_FETCHED) >= EX_FETCHED then
    acc.pages = acc.pages + 1
    if (A.host_max or 0) > 0 then
      local host = fr_second(id)
      local n = redis.call('HINCRBY', K.hostpages, host, '1')
      if n >= A.host_max then redis.call('HSET', K.capped, host, fr_int(n)) end
    end
  end
  if record > 0 then
    local new = f[EX_COUNTED] or 0
    for i = from, to do
      if X.reply[3 + i] == 1 then new = new + 1 end
    end
    if flags % (2 * EX_AWAY) >= EX_AWAY and A.outbox_id then
      X.parked[#X.parked + 1] = {d = d, r = ARGV[T + record], n = new}
    else
      redis.call('XADD', K.results, 'MAXLEN', '~', acc.cap, '*', 'rec', ARGV[T + record], 'new_links', fr_int(new))
      acc.records = acc.records + 1 -- ever added: minus the stream's length, what trimming dropped
    end
  end
  if (f[EX_FAILED] or 0) > 0 then acc.failures[#acc.failures + 1] = ARGV[T + f[EX_FAILED]] end
  if visit > 0 then -- the URL's state for its next fetch (frontier/visit.go)
    acc.due[#acc.due + 1] = fr_int(X.now + (f[EX_DUE] or 0))
    acc.due[#acc.due + 1] = ARGV[T + visit]
  end
  if flags % (2 * EX_REFUND) >= EX_REFUND then ex_refund_later(X, id, f[EX_GRANT] or 0, f[EX_ADDR]) end
  if flags >= EX_DEFERRED then ex_put_later(X, f, id, flags, acc) end
  local ms = f[EX_MS] or 0
  if ms > 0 and A.factor then -- adaptive politeness: the host's last fetch sets its interval
    acc.adapts[fr_second(id)] = math.min(math.floor(A.factor * ms), A.max_delay_ms or 60000)
  end
end

-- ex_write_finished writes what the recorded pages share: their stats
-- (a stat's text names fields, "ok,status:200"), their leases ended, the
-- ids this call ended (for it sent again), their next visits, failures.
local function ex_write_finished(X, acc)
  local K = X.K
  for text, n in pairs(acc.stats) do
    for stat in string.gmatch(ex_text(X, text), '[^,]+') do ex_add(X, stat, n) end
  end
  if acc.pages > 0 then ex_add(X, 'pages', acc.pages) end
  if acc.records > 0 then ex_add(X, 'records', acc.records) end
  if #acc.gone > 0 then redis.call('ZREM', K.leases, unpack(acc.gone)) end
  if #acc.ended > 0 then redis.call('SET', K.ended, table.concat(acc.ended, ' '), 'PX', '86400000') end
  if #acc.due > 0 then redis.call('ZADD', K.due, unpack(acc.due)) end
  if #acc.deferred > 0 then redis.call('ZADD', K.deferred, unpack(acc.deferred)) end
  if #acc.requeued > 0 then
    fr_push_front(X.Q, acc.requeued, X.now)
    local holds = {}
    for host, at in pairs(acc.holds) do
      holds[#holds + 1] = fr_int(at)
      holds[#holds + 1] = host
    end
    fr_zadd_ready(X.Q, 'GT', holds) -- not offered again before then
  end
  if #acc.failures > 0 then
    redis.call('LPUSH', K.failed, unpack(acc.failures))
    redis.call('LTRIM', K.failed, 0, string.format('%d', (X.A.failed_cap or 0) - 1))
  end
end

-- ex_adapt: a host's adaptive interval counts from its last response, so
-- its bucket has no token before then (its tat moves there, never back).
local function ex_adapt(X, adapts)
  local K, keep, later = X.K, X.A.pause_keep_ms or 0, {}
  for host, ms in pairs(adapts) do
    local key = K.buckets .. host
    redis.call('HSET', key, 'adapt', fr_int(ms))
    if redis.call('PTTL', key) < keep then redis.call('PEXPIRE', key, fr_int(keep)) end
    redis.call('HSET', K.slowed, host, '1')
    later[#later + 1] = fr_int(X.now + ms)
    later[#later + 1] = host
  end
  fr_zadd_ready(X.Q, 'GT', later)
end

-- 2. ex_finish_pages ends the finished leases. A page whose lease is
-- still held is recorded (ex_record), answered 1; one this exchange
-- recorded when sent before, 2; one whose lease was lost (expired and
-- reclaimed: its URL is queued again and will have its own record), 0,
-- and it records and counts nothing.
local function ex_finish_pages(X)
  local finished = X.A.done or {}
  if #finished == 0 then return end
  local ids, T = {}, X.T
  for d = 1, #finished do ids[d] = ARGV[T + finished[d][EX_LEASE]] end
  local held, again, leaseIDs = ex_held(X, ids)
  local acc = {gone = {}, failures = {}, ended = {}, adapts = {}, due = {}, stats = {}, pages = 0, records = 0,
    cap = fr_int(X.A.results_cap or 0), deferred = {}, requeued = {}, holds = {}}
  local link = 1 -- the first link of the next page among this call's
  for d, f in ipairs(finished) do
    local from = link
    link = link + (f[EX_LINKS] or 0)
    if held[d] then
      acc.ended[#acc.ended + 1] = leaseIDs[d]
      ex_record(X, d, f, ids[d], from, link - 1, acc)
      X.answer[d] = '1'
    elseif again[d] then
      acc.ended[#acc.ended + 1] = leaseIDs[d] -- for this call sent yet again
      X.answer[d] = '2'
    else
      X.answer[d] = '0'
    end
  end
  ex_write_finished(X, acc)
  ex_adapt(X, acc.adapts)
end

-- 3. ex_outbox, the transactional outbox: a page's links to other shards'
-- hosts are offered there by calls of their own, in the same pipeline but
-- not in this atomic step, so its record waits here, with those links,
-- until the worker acks the entry (the offers went through) or the
-- scheduler offers the links again itself: a crash between the calls
-- loses nothing. An acked entry's records go to the results stream, their
-- new_links counting the offers' too; one gone already (acked by the
-- scheduler) is skipped.
local function ex_outbox(X)
  local A, K = X.A, X.K
  if #X.parked > 0 then
    local links = '[]'
    if A.outbox then links = ex_text(X, A.outbox) end
    redis.call('HSET', K.outbox, A.outbox_id, string.format('%d', X.now) .. '\n' .. cjson.encode(X.parked) .. '\n' .. links)
  end
  for _, ack in ipairs(A.acks or {}) do
    local entry = redis.call('HGET', K.outbox, ack.id)
    if entry then
      X.acked = X.acked + 1
      local pages = cjson.decode(string.match(entry, '^%d+\n([^\n]*)'))
      local extra = ack.extra or {}
      for _, p in ipairs(pages) do
        redis.call('XADD', K.results, 'MAXLEN', '~', fr_int(A.results_cap or 0), '*', 'rec', p.r,
          'new_links', string.format('%d', p.n + (extra[p.d] or 0)))
      end
      ex_add(X, 'records', #pages)
      redis.call('HDEL', K.outbox, ack.id)
    end
  end
end

-- 5. ex_give_back: leases given back unused (a stopping worker's
-- prefetched URLs, a late URL whose host had no new token: ex_again) go
-- back to the front of their hosts' queues, and their tokens, unused, to
-- their buckets (ex_refund).
local function ex_give_back(X)
  local given = X.A.back or {}
  if #given == 0 then return end
  local ids, grants, addrs = {}, X.A.back_grants or {}, X.A.back_addrs or {}
  for r = 1, #given do ids[r] = ex_text(X, given[r]) end
  local held = redis.call('ZMSCORE', X.K.leases, unpack(ids))
  local back, gone, kept = {}, {}, X.kept or {}
  for r = 1, #given do
    if held[r] and not kept[r] then
      local _, entry = fr_split(ids[r])
      back[#back + 1] = entry
      gone[#gone + 1] = ids[r]
      ex_refund_later(X, ids[r], grants[r] or 0, addrs[r])
    end
  end
  if #gone > 0 then
    redis.call('ZREM', X.K.leases, unpack(gone))
    fr_push_front(X.Q, back, X.now)
  end
end

-- 6. ex_refund: the tokens of URLs that made no request (disallowed by
-- robots.txt, skipped, given back unused) go back to their hosts'
-- buckets by the bucket's rule (tb_refund: only a host's last tokens),
-- never before a pause's end, so that such a URL does not cost its host
-- an interval. A host not in ready has a full bucket.
local function ex_refund(X)
  local K = X.K
  for host, grants in pairs(X.refunds) do
    local ready = fr_rkey(X.Q, host)
    local tat = redis.call('ZSCORE', ready, host)
    if tat then
      tat = tonumber(tat)
      local b = HB_NONE
      if redis.call('HEXISTS', K.slowed, host) == 1 then b = hb_bucket(X, host) end
      local r, size = hb_rate(X, b, host)
      if r > 0 then
        local slots = {}
        for i, g in ipairs(grants) do slots[i] = g / 1000 end
        local was = tat
        tat = tb_refund(tat, slots, 1000 / r, HB_SLOT_ROUNDING, hb_paused_tat(b, r, size))
        if tat < was then redis.call('ZADD', ready, 'XX', fr_tat(tat), host) end
      end
    end
  end
  if next(X.arefunds) and X.rate > 0 then ip_refund(X, X.arefunds, 1000 / X.rate) end
end

-- 7. ex_write_stats writes the counters the steps before bumped.
local function ex_write_stats(X)
  for field, by in pairs(X.bump) do
    redis.call('HINCRBY', X.K.stats, field, fr_int(by))
  end
end

-- 8. ex_budget: with a page budget, how many URLs the pop may hand out.
-- The budget holds for the whole crawl, exactly: a URL in flight may still
-- become a page, so it counts against the budget already. (A budget of
-- -1 is this shard's share, stats' allow.)
local function ex_budget(X)
  local A, K = X.A, X.K
  X.W = math.max(0, (A.want or 0) - #X.again) -- a late URL kept is one of the URLs wanted (ex_again)
  X.budget = A.budget or 0
  X.limited = X.budget ~= 0
  if not X.limited then return end
  if X.budget < 0 then X.budget = tonumber(redis.call('HGET', K.stats, 'allow') or '0') end
  X.pages = tonumber(redis.call('HGET', K.stats, 'pages') or '0')
  local room = X.budget - X.pages - redis.call('ZCARD', K.leases)
  if room <= 0 and X.W > 0 then X.wait = -1 end -- nothing to pop until a page ends: back off
  X.W = math.max(0, math.min(X.W, room))
end

-- ex_due is a round's due hosts (host, tat, host, tat, …: at most m, whose
-- next token's window opens by the horizon), the longest queues first, and
-- which of them reached the cap of pages a host. It notes in X.marks those
-- marked in slowed, whose bucket hashes hold something to read: one HMGET
-- of slowed a round, and none when slowed is empty.
local function ex_due(X, m)
  local K = X.K
  local due = redis.call('ZRANGEBYSCORE', X.pready, '-inf', fr_tat(X.reach), 'WITHSCORES', 'LIMIT', '0', fr_int(m))
  local capped = {}
  if #due == 0 then return due, capped end
  local hosts = {}
  for i = 1, #due, 2 do hosts[#hosts + 1] = due[i] end
  if X.anySlowed then
    local v = redis.call('HMGET', K.slowed, unpack(hosts))
    for i, host in ipairs(hosts) do X.marks[host] = v[i] end
  end
  if X.anyCapped then
    local v = redis.call('HMGET', K.capped, unpack(hosts))
    for i, host in ipairs(hosts) do capped[host] = v[i] and tonumber(v[i]) >= X.A.host_max end
  end
  if #hosts == 1 then return due, capped end
  -- The longest queues go first: when fewer URLs are wanted than the
  -- round's hosts could give, those that lose are the ones with the
  -- least left, so that the hosts drain together rather than a few being
  -- left, late in the crawl, with URLs that come one an interval while
  -- loops wait. (Ties keep the tat order.)
  local lens = redis.call('HMGET', K.lengths, unpack(hosts))
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
  return sorted, capped
end

-- ex_drop_blocked: a blocked host's queued URLs end with their records, a
-- thousand a visit (fr_drop_blocked); its queue emptied, it leaves ready
-- (dry), else it stays due for the next. It reports whether anything
-- moved.
local function ex_drop_blocked(X, host, dry)
  local n, gone = fr_drop_blocked(X.Q, host, X.K.results, X.A.results_cap or 0, 1000)
  if gone then dry[#dry + 1] = host end
  return n > 0
end

-- ex_drop_capped: a host that had its pages has what is queued for it
-- dropped and counted, a thousand URLs a visit, its highest levels first;
-- its queue emptied, it leaves ready (dry). It reports whether anything
-- moved.
local function ex_drop_capped(X, host, dry)
  local n, gone = fr_pop(X.Q, host, 1000, {})
  if n > 0 then
    redis.call('HINCRBY', X.K.stats, 'skipped_links:max_pages_per_host', fr_int(n))
    X.taken = X.taken + n
  end
  if gone then dry[#dry + 1] = host end
  return n > 0
end

-- 4. ex_again: a late URL given back (its token's window closed before
-- its request could go: it waited in its worker's buffer, or for its
-- host's robots.txt) is popped again first, by the pop's own rule: its
-- old token goes back while it is the host's last (ex_refund's rule), and
-- the host gives it a new one if its next token's window opens by the
-- pop's horizon (hb_tokens; not with politeness per address). Its
-- lease is kept and the URL goes back to its worker under the new token
-- (the reply's again), one of the URLs the call wanted (ex_budget); the
-- host's bound holds as for any popped URL: the late token is no longer
-- counted, or stays counted and wasted.
-- A host with no token by then (its bucket spent by others' requests, a
-- pause, a Crawl-delay), or a paused crawl, leaves the lease to
-- ex_give_back, as any given back. Asked in the call the worker makes
-- anyway: a late URL costs no call of its own.
local function ex_again(X)
  local A, K = X.A, X.K
  local late = A.back_again or {}
  X.kept, X.again = {}, {}
  -- With politeness per address (addrs.lua) a late URL goes back to its
  -- queue as any given back: a new token would need its address's too.
  if #late == 0 or X.stale or (A.ip and X.rate > 0) or redis.call('EXISTS', K.paused) == 1 then return end
  local grants = A.back_grants or {}
  -- The pop's context (ex_pop), with its horizon: its slots count from
  -- the pop's now.
  local T = {K = K, A = A, rate = X.rate, burst = X.burst, least = A.least_ms or 0, nowus = X.nowus,
    tnow = X.nowus / 1000, marks = {}, slots = {}, froms = {}, untils = {}, tokened = false, rules = false}
  T.horizon = T.tnow + (A.ahead_ms or 0)
  for _, r in ipairs(late) do
    local member = ex_text(X, A.back[r])
    if redis.call('ZSCORE', K.leases, member) then
      local host, grant = fr_second(member), grants[r] or 0
      T.marks[host] = redis.call('HGET', K.slowed, host)
      local where, tat = fr_host_tat(X.Q, host)
      tat = tat or 0
      local b = HB_NONE
      if T.marks[host] then b = hb_bucket(T, host) end
      local rate, size = hb_rate(T, b, host)
      if rate > 0 and grant > 0 and tat > 0 then
        -- Its token goes back if it is the host's last, before one is
        -- taken, never before a pause's end.
        tat = tb_refund(tat, {grant / 1000}, 1000 / rate, HB_SLOT_ROUNDING, hb_paused_tat(b, rate, size))
      end
      local k, _, r2, size2, first = hb_tokens(T, host, 1, tat)
      if hb_blocked(T, host) then -- blocked: back to its queue, which the pops end
        k = 0
      end
      if k > 0 and r2 == 0 then -- no limit now: nothing to take
        X.kept[r] = true
        X.again[#X.again + 1] = {r, 0, 0, -1}
      elseif k > 0 then
        redis.call('ZADD', where, fr_tat(hb_take(T, 1, r2, size2, first)), host)
        hb_granted(X, host, b)
        X.kept[r] = true
        X.again[#X.again + 1] = {r, T.slots[#T.slots], T.froms[#T.froms], T.untils[#T.untils]}
      end
    end
  end
  X.rules = T.rules
end

-- ex_pop_host pops up to q URLs of a due host with a token each; a host
-- with no token by the horizon (a pause, a delay of its own) is not
-- looked at again this call, and its score says when it has one. A host
-- popped moves behind the others: its score becomes its tat after the
-- tokens taken (without a limit, now). One whose queue ran dry leaves
-- ready (dry), for refill while its bucket is still filling (a URL queued
-- for it brings it back with that tat), or for good when it is full.
-- It reports whether anything moved.
local function ex_pop_host(X, host, tat, q, dry)
  local k, b, r, size, first = hb_tokens(X, host, q, tat)
  local slots, early, late, anext
  if k > 0 and X.ip and r > 0 and not hb_rule(X, host) then
    -- Its address's bucket too (addrs.lua): a host of a rule of its own
    -- keeps to that alone.
    if not X.addrOf[host] then k, b = 0, tat -- no address known yet: the worker resolves it first
    else
      slots, early, late, anext = ip_slots(X, host, k, r, size, tat)
      k = #slots
      if k == 0 then b = math.max(tat, anext) end -- due again when its address has a token
    end
  end
  if k == 0 then
    X.visited[host] = true
    if b ~= tat then
      X.readyAdd[#X.readyAdd + 1] = fr_tat(b)
      X.readyAdd[#X.readyAdd + 1] = host
    end
    return false
  end
  local n, gone = fr_pop(X.Q, host, k, X.got)
  X.taken = X.taken + n
  if n > 0 then
    local tat2 = X.tnow -- no limit: its turn moves behind the others'
    if slots then
      tat2 = ip_take(X, host, slots, n, early, late, r)
      hb_granted(X, host, b)
    elseif r > 0 then
      tat2 = hb_take(X, n, r, size, first)
      hb_granted(X, host, b)
    else
      for _ = 1, n do
        X.slots[#X.slots + 1], X.froms[#X.froms + 1], X.untils[#X.untils + 1] = 0, 0, -1
      end
    end
    local rule = hb_rule(X, host)
    if rule then X.rates[host] = rule[1] end -- the worker weighs a Crawl-delay against it
    if b.delay > 0 then
      X.delays[host] = b.delay
    elseif tat <= X.tnow then -- its bucket was full: no grant before this pop
      X.firsts[host] = fr_tat(tat2)
    end
    tat = tat2
  end
  if gone then
    dry[#dry + 1] = host
    if tat > X.tnow then
      X.refillAdd[#X.refillAdd + 1] = fr_tat(tat)
      X.refillAdd[#X.refillAdd + 1] = host
    end
  elseif n > 0 then
    X.readyAdd[#X.readyAdd + 1] = fr_tat(tat)
    X.readyAdd[#X.readyAdd + 1] = host
  end
  return n > 0
end

-- ex_pop_round pops from the hosts due now, shared out among them (at most
-- per each), and moves their scores; it reports whether it found any due
-- host and whether anything moved.
local function ex_pop_round(X)
  local m = X.W - #X.got / 2
  local due, capped = ex_due(X, m)
  if #due == 0 then return false, false end
  local per = math.ceil(m / (#due / 2))
  local dry, moved = {}, false
  if X.ip then
    local hosts = {}
    for i = 1, #due, 2 do hosts[#hosts + 1] = due[i] end
    ip_addresses(X, hosts)
  end
  for i = 1, #due, 2 do
    local host, tat = due[i], tonumber(due[i + 1])
    local q = math.min(per, X.W - #X.got / 2)
    if q <= 0 then break end
    if X.visited[host] then
      -- not due: looked at already by this call
    elseif capped[host] then
      moved = ex_drop_capped(X, host, dry) or moved
    elseif hb_blocked(X, host) then
      moved = ex_drop_blocked(X, host, dry) or moved
    else
      moved = ex_pop_host(X, host, tat, q, dry) or moved
    end
  end
  if #dry > 0 then redis.call('ZREM', X.pready, unpack(dry)) end
  if #X.readyAdd > 0 then
    redis.call('ZADD', X.pready, unpack(X.readyAdd))
    X.readyAdd = {}
  end
  return true, moved or #dry > 0
end

-- ex_lease puts the popped URLs under fresh leases, the i-th under the
-- i-th lease id the call brought.
local function ex_lease(X)
  local M = #X.got / 2
  if M == 0 then return end
  local exp = {}
  local untl = fr_int(X.now + (X.A.lease_ms or 0))
  for i = 1, M do
    exp[2 * i - 1] = untl
    exp[2 * i] = ex_text(X, X.A.ids + i - 1) .. '\n' .. X.got[2 * i - 1] .. '\n' .. X.got[2 * i]
  end
  redis.call('ZADD', X.K.leases, unpack(exp))
end

-- ex_next_wait: when fewer URLs than wanted were popped, how long until a
-- host is due (-1: nothing queued). A host whose queue ran dry stays in
-- ready until its bucket is full; with nothing queued at all, nothing is
-- coming due.
local function ex_next_wait(X)
  X.queued = X.queued or fr_queued(X.Q)
  X.wait = -1
  if X.queued > 0 then
    local nxt = redis.call('ZRANGE', X.pready, 0, 0, 'WITHSCORES')
    if #nxt == 2 then X.wait = math.max(0, math.ceil(tonumber(nxt[2]) - X.reach)) end
  end
end

-- 9. ex_pop: up to W URLs of hosts that are due, each URL with a token of
-- its host's bucket (tokens.lua), taken here: a host whose bucket is
-- empty or paused is due when it next has a token, and is not offered
-- before. A host's ready score is its bucket's tat: the time the bucket
-- is full again, with a burst of 1 the time its next token comes; taking
-- tokens is the ZADD that moves it, so a polite pop costs no call a host
-- for its bucket. A token is a window of time (tb_window): a host whose
-- next token's window opens by the horizon (ahead_ms from now) counts as
-- due, its tokens are reserved, and the worker fetches each URL in its
-- window, so that calls may be ahead_ms apart without a token coming too
-- late. Only hosts marked in slowed (a pause, a Crawl-delay, an adaptive
-- interval) have a bucket hash worth reading.
local function ex_pop(X)
  local A, K = X.A, X.K
  X.delays, X.firsts, X.rates = {}, {}, {} -- the reply's delays, fresh and rates
  X.slots, X.froms, X.untils, X.tokened = {}, {}, {}, false
  X.least, X.tnow = A.least_ms or 0, X.nowus / 1000 -- now, ms with a fraction: the tokens' clock
  X.horizon = X.tnow + (A.ahead_ms or 0)
  ip_begin(X, A)
  X.reach = X.horizon -- a host whose tat is by reach has a token whose window opens by the horizon
  if X.rate > 0 then X.reach = X.horizon + tb_window(X.rate, X.burst, X.least) end
  if X.W <= 0 then return end
  if X.stale then return end -- the caller reads the new settings, and asks again at once (wait 0)
  if redis.call('EXISTS', K.paused) == 1 then -- the crawl is paused (hold.lua): nothing is handed out
    X.paused, X.wait = true, -1
    return
  end
  X.anySlowed = redis.call('EXISTS', K.slowed) == 1
  -- A host of its own rate may have tokens whose windows open earlier
  -- than the crawl's reach says: the reach is the widest.
  for _, rule in pairs(hb_rules(X)) do
    if rule and rule[1] > 0 then X.reach = math.max(X.reach, X.horizon + tb_window(rule[1], rule[2], X.least)) end
  end
  -- Hosts that reached the cap of pages are marked in capped when their
  -- count crosses it: while none has, a round reads nothing for the cap.
  X.anyCapped = (A.host_max or 0) > 0 and redis.call('EXISTS', K.capped) == 1
  X.marks, X.visited, X.readyAdd, X.refillAdd, X.taken = {}, {}, {}, {}, 0
  for _ = 1, 4 do
    if X.W - #X.got / 2 <= 0 then break end
    local found, moved = ex_pop_round(X)
    if not found or not moved then break end
  end
  if X.ip then ip_write(X) end
  if #X.refillAdd > 0 then redis.call('ZADD', K.refill, unpack(X.refillAdd)) end
  -- A bucket full again needs no entry: refill keeps only those filling.
  redis.call('ZREMRANGEBYSCORE', K.refill, '-inf', fr_int(X.now))
  if X.taken > 0 then X.queued = fr_count(X.Q, -X.taken) end
  ex_lease(X)
  if #X.got / 2 < X.W then ex_next_wait(X) end
  if #X.got == 0 then X.done = redis.call('EXISTS', K.done) end
end

-- 10. ex_drained: with a budget, the crawl can end with URLs still queued,
-- so its end is read; and when nothing is queued (or the budget spent),
-- nothing held and no outbox entry waits, the crawl may be over: the
-- scheduler is told, so that it need not sweep often to notice.
local function ex_drained(X)
  local K = X.K
  if X.limited then X.done = redis.call('EXISTS', K.done) end
  local ended = #(X.A.done or {}) > 0 or #(X.A.back or {}) > 0 or X.acked > 0
  if ended and redis.call('EXISTS', K.leases) == 0
      and ((X.queued or fr_queued(X.Q)) == 0 or (X.limited and X.pages >= X.budget))
      and redis.call('EXISTS', K.outbox) == 0 then
    redis.call('PUBLISH', K.queues .. 'wake', 'drained')
  end
end

-- 11. ex_reply: the Bloom reply, then the exchange's object, then the
-- popped items (unencoded: they are JSON already).
local function ex_reply(X)
  local reply = X.reply
  local out = {held = table.concat(X.answer), pages = X.pages, done = X.done, wait = X.wait}
  if X.delays and next(X.delays) then out.delays = X.delays end
  if X.tokened then
    out.slot, out.from, out['until'] = X.slots, X.froms, X.untils
  end
  if #X.got > 0 or #X.again > 0 then out.now_us = string.format('%d', X.nowus) end
  if #X.again > 0 then out.again = X.again end
  if X.paused then out.paused = 1 end
  if X.settings > 0 then out.settings = X.settings end
  if X.rates and next(X.rates) then out.rates = X.rates end
  if X.firsts and next(X.firsts) then out.fresh = X.firsts end
  if X.resolve and #X.resolve > 0 then out.resolve = X.resolve end
  if X.addrOut and next(X.addrOut) then out.addrs = X.addrOut end
  reply[#reply + 1] = cjson.encode(out)
  for _, v in ipairs(X.got) do reply[#reply + 1] = v end
  return reply
end
