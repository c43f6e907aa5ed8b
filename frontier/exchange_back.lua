-- requires: exchange_guard push hostbucket addrs
-- exchange_back.lua: what an exchange gives back (steps 4 to 7 of
-- exchange.lua): late URLs asking their hosts for a new token, leases
-- given back unused to their queues' fronts, unused tokens to their
-- buckets, and the counters the steps bumped.

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
        tat = tb_refund(tat, slots, 1000 / r, FR_SLOT_ROUNDING, hb_paused_tat(b, r, size))
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
        tat = tb_refund(tat, {grant / 1000}, 1000 / rate, FR_SLOT_ROUNDING, hb_paused_tat(b, rate, size))
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
