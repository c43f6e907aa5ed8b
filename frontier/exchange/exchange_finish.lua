-- requires: exchange_call exchange_back pushback
-- exchange_finish.lua: an exchange's finished pages (finish.lua): their
-- leases ended and their records written (their new links counted as
-- exchange.lua found them), or parked in the outbox until their links'
-- offers are acked; what goes back to the queues without a page; and the
-- tokens of those that made no request, left for back.lua.

-- ex_fresh_read is, per finished lease (leaseIDs), how many of its
-- page's links exchange.lua found new (the process's fresh hash, which
-- exchange.lua fills: ex_fresh_write), and clears them: each lease ends
-- here once, or is lost.
local function ex_fresh_read(C, leaseIDs)
  local got, fresh, any = redis.call('HMGET', C.K.fresh, unpack(leaseIDs)), {}, false
  for d = 1, #leaseIDs do
    fresh[d] = tonumber(got[d]) or 0
    any = any or fresh[d] > 0
  end
  if any then redis.call('HDEL', C.K.fresh, unpack(leaseIDs)) end
  return fresh
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

-- ex_record is what finished page f (the d-th, under lease id, new of
-- its links new to the crawl) leaves, its lease still held: a page counted
-- (and its host's, under a cap of pages a host), its record in the
-- results stream or parked in the outbox, its failure, its next visit,
-- its token's refund, its host's adaptive interval. The writes a page
-- shares with the others are gathered in acc (ex_write_finished), the
-- records that wait in the outbox in acc.parked, the refunds in
-- acc.refunds.
local function ex_record(C, d, f, id, new, acc)
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
  if #acc.gone > 0 then
    redis.call('ZREM', K.leases, unpack(acc.gone))
    hs_release(ex_slots(C), acc.gone) -- their hosts' slots (hostslots.lua)
  end
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

-- 1. ex_finish_pages ends the finished leases. A page whose lease is
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
  local fresh = ex_fresh_read(C, leaseIDs)
  local acc = {gone = {}, failures = {}, ended = {}, adapts = {}, due = {}, stats = {}, pages = 0, records = 0,
    cap = fr_int(C.A.results_cap or 0), deferred = {}, requeued = {}, holds = {}, parked = {}, refunds = refunds}
  for d, f in ipairs(finished) do
    if held[d] then
      acc.ended[#acc.ended + 1] = leaseIDs[d]
      ex_record(C, d, f, ids[d], (f[EX_COUNTED] or 0) + fresh[d], acc)
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

-- 2. ex_park, the transactional outbox: a page's links to other shards'
-- hosts are offered there by calls of their own, in the same pipeline but
-- not in this atomic step, so its record waits here, with those links,
-- until the worker acks the entry (the offers went through: exchange.lua,
-- ex_acks) or the scheduler offers the links again itself: a crash
-- between the calls loses nothing.
local function ex_park(C, parked)
  if #parked == 0 then return end
  local A, links = C.A, '[]'
  if A.outbox then links = ex_text(C, A.outbox) end
  redis.call('HSET', C.K.outbox, A.outbox_id, string.format('%d', C.now) .. '\n' .. cjson.encode(parked) .. '\n' .. links)
end
