-- requires: exchange_guard exchange_back pushback
-- exchange_finish.lua: an exchange's finished pages (exchange.lua): their
-- new links queued (within a host's cap), their leases ended and their
-- records written, or parked in the outbox until their links' offers are
-- acked; and whether the crawl may be over once they are.

-- ex_entry_host is the host of a back-of-queue entry ("host[ level]\n…").
local function ex_entry_host(e)
  local h = string.sub(e, 1, string.find(e, '\n', 1, true) - 1)
  local sp = string.find(h, ' ', 1, true)
  return sp and string.sub(h, 1, sp - 1) or h
end

-- ex_room is, per host of the entries, how many more it may have queued
-- under a cap of host_max pages a host: twice the cap (a queued URL may
-- fail, or redirect), less its pages and what it has queued.
local function ex_room(C, entries)
  local hosts, room = {}, {}
  for _, e in ipairs(entries) do
    local h = ex_entry_host(e)
    if not room[h] then room[h], hosts[#hosts + 1] = 0, h end
  end
  for at = 1, #hosts, 1000 do -- HMGET in parts: unpack's stack is bounded
    local part = {unpack(hosts, at, math.min(at + 999, #hosts))}
    local pages, lens = redis.call('HMGET', C.K.hostpages, unpack(part)), redis.call('HMGET', C.K.lengths, unpack(part))
    for i, h in ipairs(part) do room[h] = 2 * C.A.host_max - (tonumber(pages[i]) or 0) - (tonumber(lens[i]) or 0) end
  end
  return room
end

-- ex_cap_links keeps of the new links what a host's page cap leaves room
-- for: its queue stays under twice the cap (a sitemap index of millions of
-- URLs fills nothing past it). The rest are counted, as the pop counts a
-- capped host's (skipped_links:max_pages_per_host). (The crawl's budget
-- bounds nothing here: a raised budget reopens an ended crawl, with the
-- URLs it left queued.)
local function ex_cap_links(C, fresh, stats)
  if #fresh == 0 or (C.A.host_max or 0) <= 0 then return fresh end
  local room, kept, dropped = ex_room(C, fresh), {}, 0
  for _, e in ipairs(fresh) do
    local h = ex_entry_host(e)
    if room[h] <= 0 then
      dropped = dropped + 1
    else
      kept[#kept + 1] = e
      room[h] = room[h] - 1
    end
  end
  if dropped > 0 then ex_add(stats, 'skipped_links:max_pages_per_host', dropped) end
  return kept
end

-- 1. ex_queue_links: the links the Bloom filter found new are queued, as
-- far as a host's page cap leaves room; counted in stats.
local function ex_queue_links(C, stats)
  local fresh = {}
  for i = 1, C.links do
    if C.reply[3 + i] == 1 then fresh[#fresh + 1] = ARGV[C.link0 + i - 1] end
  end
  local queued = fr_push_back(C.Q, ex_cap_links(C, fresh, stats), C.now)
  if queued > 0 then ex_add(stats, 'enqueued', queued) end
  if C.links > 0 then ex_add(stats, 'offered', C.links) end
end


-- ex_held tells which of the finished leases (ids, their members) are
-- still held (one ZMSCORE), and of those not held, which this very
-- exchange ended when it was sent before (its reply lost): a process's
-- calls are one at a time, so that is its last exchange to end leases,
-- whose ids it kept (ended). It returns held, again and the lease ids.
local function ex_held(C, ids)
  local held = redis.call('ZMSCORE', C.K.leases, unpack(ids))
  local leaseIDs, again = {}, {}
  for d = 1, #ids do leaseIDs[d] = fr_head(ids[d]) end
  for d = 1, #ids do
    if not held[d] then
      local last = ' ' .. (redis.call('GET', C.K.ended) or '') .. ' '
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
local function ex_put_later(C, f, id, flags, acc)
  local put, entry = f[EX_PUT] or 0, nil
  if put > 0 then
    entry = ex_text(C, put)
  else
    local _, own = fr_split(id)
    entry = own
  end
  local at = C.now + (f[EX_AFTER] or 0)
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
-- shares with the others are gathered in acc (ex_write_finished), the
-- records that wait in the outbox in acc.parked, the refunds in
-- acc.refunds.
local function ex_record(C, d, f, id, from, to, acc)
  local A, K, T = C.A, C.K, C.T
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
      if C.reply[3 + i] == 1 then new = new + 1 end
    end
    if flags % (2 * EX_AWAY) >= EX_AWAY and A.outbox_id then
      acc.parked[#acc.parked + 1] = {d = d, r = ARGV[T + record], n = new}
    else
      redis.call('XADD', K.results, 'MAXLEN', '~', acc.cap, '*', 'rec', ARGV[T + record], 'new_links', fr_int(new))
      acc.records = acc.records + 1 -- ever added: minus the stream's length, what trimming dropped
    end
  end
  if (f[EX_FAILED] or 0) > 0 then acc.failures[#acc.failures + 1] = ARGV[T + f[EX_FAILED]] end
  if visit > 0 then -- the URL's state for its next fetch (frontier/recrawl/recrawl.go)
    acc.due[#acc.due + 1] = fr_int(C.now + (f[EX_DUE] or 0))
    acc.due[#acc.due + 1] = ARGV[T + visit]
  end
  if flags % (2 * EX_REFUND) >= EX_REFUND then ex_refund_later(C, acc.refunds, id, f[EX_GRANT] or 0, f[EX_ADDR]) end
  if flags >= EX_DEFERRED then ex_put_later(C, f, id, flags, acc) end
  local ms = f[EX_MS] or 0
  if ms > 0 and A.factor then -- adaptive politeness: the host's last fetch sets its interval
    acc.adapts[fr_second(id)] = math.min(math.floor(A.factor * ms), A.max_delay_ms or 60000)
  end
end

-- ex_write_finished writes what the recorded pages share: their stats
-- (a stat's text names fields, "ok,status:200"), their leases ended, the
-- ids this call ended (for it sent again), their next visits, failures.
local function ex_write_finished(C, acc, stats)
  local K = C.K
  for text, n in pairs(acc.stats) do
    for stat in string.gmatch(ex_text(C, text), '[^,]+') do ex_add(stats, stat, n) end
  end
  if acc.pages > 0 then ex_add(stats, 'pages', acc.pages) end
  if acc.records > 0 then ex_add(stats, 'records', acc.records) end
  if #acc.gone > 0 then redis.call('ZREM', K.leases, unpack(acc.gone)) end
  if #acc.ended > 0 then redis.call('SET', K.ended, table.concat(acc.ended, ' '), 'PX', '86400000') end
  if #acc.due > 0 then redis.call('ZADD', K.due, unpack(acc.due)) end
  if #acc.deferred > 0 then redis.call('ZADD', K.deferred, unpack(acc.deferred)) end
  if #acc.requeued > 0 then
    fr_push_front(C.Q, acc.requeued, C.now)
    local holds = {}
    for host, at in pairs(acc.holds) do
      holds[#holds + 1] = fr_int(at)
      holds[#holds + 1] = host
    end
    fr_zadd_ready(C.Q, 'GT', holds) -- not offered again before then
  end
  if #acc.failures > 0 then
    redis.call('LPUSH', K.failed, unpack(acc.failures))
    redis.call('LTRIM', K.failed, 0, string.format('%d', (C.A.failed_cap or 0) - 1))
  end
end

-- ex_adapt: a host's adaptive interval counts from its last response, so
-- its bucket has no token before then (its tat moves there, never back).
local function ex_adapt(C, adapts)
  local K, keep, later = C.K, C.A.pause_keep_ms or 0, {}
  for host, ms in pairs(adapts) do
    local key = K.buckets .. host
    redis.call('HSET', key, 'adapt', fr_int(ms))
    if redis.call('PTTL', key) < keep then redis.call('PEXPIRE', key, fr_int(keep)) end
    redis.call('HSET', K.slowed, host, '1')
    later[#later + 1] = fr_int(C.now + ms)
    later[#later + 1] = host
  end
  fr_zadd_ready(C.Q, 'GT', later)
end

-- 2. ex_finish_pages ends the finished leases. A page whose lease is
-- still held is recorded (ex_record), answered 1; one this exchange
-- recorded when sent before, 2; one whose lease was lost (expired and
-- reclaimed: its URL is queued again and will have its own record), 0,
-- and it records and counts nothing. It returns those digits (the
-- reply's held) and the records parked for the outbox (ex_outbox); the
-- counters go in stats, the unused tokens in refunds (ex_refund).
local function ex_finish_pages(C, stats, refunds)
  local finished, answer = C.A.done or {}, {}
  if #finished == 0 then return answer, {} end
  local ids, T = {}, C.T
  for d = 1, #finished do ids[d] = ARGV[T + finished[d][EX_LEASE]] end
  local held, again, leaseIDs = ex_held(C, ids)
  local acc = {gone = {}, failures = {}, ended = {}, adapts = {}, due = {}, stats = {}, pages = 0, records = 0,
    cap = fr_int(C.A.results_cap or 0), deferred = {}, requeued = {}, holds = {}, parked = {}, refunds = refunds}
  local link = 1 -- the first link of the next page among this call's
  for d, f in ipairs(finished) do
    local from = link
    link = link + (f[EX_LINKS] or 0)
    if held[d] then
      acc.ended[#acc.ended + 1] = leaseIDs[d]
      ex_record(C, d, f, ids[d], from, link - 1, acc)
      answer[d] = '1'
    elseif again[d] then
      acc.ended[#acc.ended + 1] = leaseIDs[d] -- for this call sent yet again
      answer[d] = '2'
    else
      answer[d] = '0'
    end
  end
  ex_write_finished(C, acc, stats)
  ex_adapt(C, acc.adapts)
  return answer, acc.parked
end

-- 3. ex_outbox, the transactional outbox: a page's links to other shards'
-- hosts are offered there by calls of their own, in the same pipeline but
-- not in this atomic step, so its record waits here, with those links,
-- until the worker acks the entry (the offers went through) or the
-- scheduler offers the links again itself: a crash between the calls
-- loses nothing. An acked entry's records go to the results stream, their
-- new_links counting the offers' too; one gone already (acked by the
-- scheduler) is skipped. It returns how many entries were acked.
local function ex_outbox(C, parked, stats)
  local A, K, acked = C.A, C.K, 0
  if #parked > 0 then
    local links = '[]'
    if A.outbox then links = ex_text(C, A.outbox) end
    redis.call('HSET', K.outbox, A.outbox_id, string.format('%d', C.now) .. '\n' .. cjson.encode(parked) .. '\n' .. links)
  end
  for _, ack in ipairs(A.acks or {}) do
    local entry = redis.call('HGET', K.outbox, ack.id)
    if entry then
      acked = acked + 1
      local pages = cjson.decode(string.match(entry, '^%d+\n([^\n]*)'))
      local extra = ack.extra or {}
      for _, p in ipairs(pages) do
        redis.call('XADD', K.results, 'MAXLEN', '~', fr_int(A.results_cap or 0), '*', 'rec', p.r,
          'new_links', string.format('%d', p.n + (extra[p.d] or 0)))
      end
      ex_add(stats, 'records', #pages)
      redis.call('HDEL', K.outbox, ack.id)
    end
  end
  return acked
end
