-- requires: exchange_back exchange_pop
-- exchange_end.lua: the handout's first and last steps (handout.lua): late
-- URLs given back ask their hosts for a new token, and the reply.

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

-- ex_reply is handout.lua's reply: 1, then one object (again: the late
-- URLs kept; B, the budget's; P, the grant's: the hosts granted and how
-- many URLs each, their tokens in the same order; whether the crawl is
-- over).
local function ex_reply(C, again, B, P)
  local done = P.done
  if B.limited then done = redis.call('EXISTS', C.K.done) end
  local out = {pages = B.pages, done = done, wait = P.wait}
  if next(P.delays) then out.delays = P.delays end
  if #P.hosts > 0 then out.hosts, out.counts = P.hosts, P.counts end
  if P.G.any then
    out.slot, out.from, out['until'] = P.G.slots, P.G.froms, P.G.untils
  end
  if P.granted > 0 or #again > 0 then out.now_us = string.format('%d', C.nowus) end
  if #again > 0 then out.again = again end
  if P.paused then out.paused = 1 end
  if C.settings > 0 then out.settings = C.settings end
  if next(P.rates) then out.rates = P.rates end
  if next(P.firsts) then out.fresh = P.firsts end
  if P.I and #P.I.resolve > 0 then out.resolve = P.I.resolve end
  if P.I and next(P.I.used) then out.addrs = P.I.used end
  return {1, cjson.encode(out)}
end
