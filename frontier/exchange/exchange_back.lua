-- requires: exchange_call push hostbucket addrkeys
-- exchange_back.lua: what an exchange gives back (back.lua, after
-- exchange.lua in the same pipeline): leases given back unused to their
-- queues' fronts, unless a late URL's host gives it a new token
-- (ex_again), and unused tokens to their buckets: those of the leases
-- given back, and those finish.lua left in the process's refunds key
-- for its pages that made no request.

-- ex_refunds is an empty list of unused tokens to give back: hosts (host
-- -> the slots of its tokens, µs) and addrs (address -> the same, for
-- tokens of an address's bucket too: politeness per address, addrs.lua).
local function ex_refunds() return {hosts = {}, addrs = {}} end

-- ex_refunds_write leaves refunds for back.lua (finish.lua does), in the
-- process's refunds key, under the count of this exchange (expect): the
-- slots as text (cjson writes a number with 14 digits, a
-- slot in µs has 16). It lives a minute: a back.lua that never came (the
-- pipeline cut short) leaves the tokens spent, a host asked less often,
-- never more.
local function ex_refunds_write(C, refunds)
  if next(refunds.hosts) == nil then return end
  local text = function(by)
    local out = {}
    for k, slots in pairs(by) do
      local t = {}
      for i, g in ipairs(slots) do t[i] = string.format('%d', g) end
      out[k] = t
    end
    return out
  end
  local r = {c = C.A.expect, hosts = text(refunds.hosts), addrs = text(refunds.addrs)}
  redis.call('SET', C.K.refunds, cjson.encode(r), 'PX', '60000')
end

-- ex_refunds_read takes the refunds finish.lua left under this
-- exchange's count (none: an empty list; those of another count are
-- another exchange's, whose back.lua never came, and stay spent).
local function ex_refunds_read(C)
  local raw = redis.call('GET', C.K.refunds)
  if not raw then return ex_refunds() end
  redis.call('DEL', C.K.refunds)
  local r = cjson.decode(raw)
  if r.c ~= C.A.expect then return ex_refunds() end
  local num = function(by)
    local out = {}
    for k, slots in pairs(by) do
      local t = {}
      for i, g in ipairs(slots) do t[i] = tonumber(g) end
      out[k] = t
    end
    return out
  end
  return {hosts = num(r.hosts), addrs = num(r.addrs)}
end

-- ex_refund_later notes in refunds that the token of lease id made no
-- request: it goes back to its host's bucket after the finished and
-- given-back leases (ex_refund), and to its address's (the text at place
-- addr, 0 for none).
local function ex_refund_later(C, refunds, id, grant, addr)
  if grant > 0 then
    local host = fr_second(id)
    local grants = refunds.hosts[host] or {}
    grants[#grants + 1] = grant
    refunds.hosts[host] = grants
    if (addr or 0) > 0 then
      local a = ex_text(C, addr)
      local ag = refunds.addrs[a] or {}
      ag[#ag + 1] = grant
      refunds.addrs[a] = ag
    end
  end
end

-- ex_give_back: leases given back unused (a stopping worker's
-- prefetched URLs, a late URL whose host had no new token: ex_again, which
-- kept the others) go back to the front of their hosts' queues, and their
-- tokens, unused, to refunds (ex_refund).
local function ex_give_back(C, kept, refunds)
  local given = C.A.back or {}
  if #given == 0 then return end
  local ids, grants, addrs = {}, C.A.back_grants or {}, C.A.back_addrs or {}
  for r = 1, #given do ids[r] = ex_text(C, given[r]) end
  local held = redis.call('ZMSCORE', C.K.leases, unpack(ids))
  local back, gone = {}, {}
  for r = 1, #given do
    if held[r] and not kept[r] then
      local _, entry = fr_split(ids[r])
      back[#back + 1] = entry
      gone[#gone + 1] = ids[r]
      ex_refund_later(C, refunds, ids[r], grants[r] or 0, addrs[r])
    end
  end
  if #gone > 0 then
    redis.call('ZREM', C.K.leases, unpack(gone))
    hs_release(ex_slots(C), gone) -- their hosts' slots (hostslots.lua)
    fr_push_front(C.Q, back, C.now)
  end
end

-- ex_refund: the tokens of URLs that made no request (disallowed by
-- robots.txt, skipped, given back unused) go back to their hosts'
-- buckets by the bucket's rule (tb_refund: only a host's last tokens),
-- never before a pause's end, so that such a URL does not cost its host
-- an interval. A host not in ready has a full bucket. H is the call's
-- token clock (ex_clock), whose rules and marks it shares.
local function ex_refund(C, H, refunds)
  local K = C.K
  for host, grants in pairs(refunds.hosts) do
    local ready = fr_rkey(C.Q, host)
    local tat = redis.call('ZSCORE', ready, host)
    if tat then
      tat = tonumber(tat)
      local b = HB_NONE
      if redis.call('HEXISTS', K.slowed, host) == 1 then b = hb_bucket(H, host) end
      local r, size = hb_rate(H, b, host)
      if r > 0 then
        local slots = {}
        for i, g in ipairs(grants) do slots[i] = g / 1000 end
        local was = tat
        tat = tb_refund(tat, slots, 1000 / r, FR_SLOT_ROUNDING, hb_paused_tat(b, r, size))
        if tat < was then redis.call('ZADD', ready, 'XX', fr_tat(tat), host) end
      end
    end
  end
  if next(refunds.addrs) and C.rate > 0 then ip_refund(K.queues, refunds.addrs, 1000 / C.rate) end
end

-- ex_again: a late URL given back (its token's window closed before
-- its request could go: it waited in its worker's buffer, or for its
-- host's robots.txt) is popped again first, by the pop's own rule and
-- clock H (ex_clock): its old token goes back while it is the host's last
-- (ex_refund's rule), and the host gives it a new one if its next token's
-- window opens by the pop's horizon (hb_tokens; not with politeness per
-- address). Its lease is kept and the URL goes back to its worker under
-- the new token (the reply's again), one of the URLs the call wanted
-- (ex_budget); the host's bound holds as for any popped URL: the late
-- token is no longer counted, or stays counted and wasted.
-- A host with no token by then (its bucket spent by others' requests, a
-- pause, a Crawl-delay), or a paused crawl, leaves the lease to
-- ex_give_back, as any given back. Asked in the call the worker makes
-- anyway: a late URL costs no call of its own. It returns the places in
-- back kept (place -> true) and, for the reply, {place, slot, from,
-- until} for each.
local function ex_again(C, H)
  local A, K = C.A, C.K
  local late = A.back_again or {}
  local kept, again = {}, {}
  -- With politeness per address (addrs.lua) a late URL goes back to its
  -- queue as any given back: a new token would need its address's too.
  if #late == 0 or C.stale or (A.ip and C.rate > 0) or redis.call('EXISTS', K.paused) == 1 then return kept, again end
  local grants = A.back_grants or {}
  for _, r in ipairs(late) do
    local member = ex_text(C, A.back[r])
    if redis.call('ZSCORE', K.leases, member) then
      local host, grant = fr_second(member), grants[r] or 0
      H.marks[host] = redis.call('HGET', K.slowed, host)
      local where, tat = fr_host_tat(C.Q, host)
      tat = tat or 0
      local b = HB_NONE
      if H.marks[host] then b = hb_bucket(H, host) end
      local rate, size = hb_rate(H, b, host)
      if rate > 0 and grant > 0 and tat > 0 then
        -- Its token goes back if it is the host's last, before one is
        -- taken, never before a pause's end.
        tat = tb_refund(tat, {grant / 1000}, 1000 / rate, FR_SLOT_ROUNDING, hb_paused_tat(b, rate, size))
      end
      local k, _, r2, size2, first = hb_tokens(H, host, 1, tat)
      if hb_blocked(H, host) then -- blocked: back to its queue, which the pops end
        k = 0
      end
      if k > 0 and r2 == 0 then -- no limit now: nothing to take
        kept[r] = true
        again[#again + 1] = {r, 0, 0, -1}
      elseif k > 0 then
        local G = hb_grants()
        redis.call('ZADD', where, fr_tat(hb_take(H, G, 1, r2, size2, first)), host)
        hb_granted(H, host, b)
        kept[r] = true
        again[#again + 1] = {r, G.slots[1], G.froms[1], G.untils[1]}
      end
    end
  end
  return kept, again
end
