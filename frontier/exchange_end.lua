-- requires: exchange_pop
-- exchange_end.lua: an exchange's end (steps 10 and 11 of exchange.lua):
-- whether the crawl may be over, and the reply.

-- 10. ex_drained: with a budget (B.limited), the crawl can end with URLs
-- still queued, so its end is read; and when the call ended leases or
-- acked outbox entries, and now nothing is queued (or the budget spent),
-- nothing held and no outbox entry waits, the crawl may be over: the
-- scheduler is told, so that it need not sweep often to notice. It
-- returns whether the crawl is over (1) as the reply says it.
local function ex_drained(C, B, P, acked)
  local K, done = C.K, P.done
  if B.limited then done = redis.call('EXISTS', K.done) end
  local ended = #(C.A.done or {}) > 0 or #(C.A.back or {}) > 0 or acked > 0
  if ended and redis.call('EXISTS', K.leases) == 0
      and ((P.queued or fr_queued(C.Q)) == 0 or (B.limited and B.pages >= B.budget))
      and redis.call('EXISTS', K.outbox) == 0 then
    redis.call('PUBLISH', K.queues .. 'wake', 'drained')
  end
  return done
end

-- 11. ex_reply: the Bloom reply, then the exchange's object (held: the
-- finished leases' digits; again: the late URLs kept; B, the budget's; P,
-- the pop's; done, the crawl's end), then the popped items (unencoded:
-- they are JSON already).
local function ex_reply(C, held, again, B, P, done)
  local reply = C.reply
  local out = {held = table.concat(held), pages = B.pages, done = done, wait = P.wait}
  if next(P.delays) then out.delays = P.delays end
  if P.G.any then
    out.slot, out.from, out['until'] = P.G.slots, P.G.froms, P.G.untils
  end
  if #P.got > 0 or #again > 0 then out.now_us = string.format('%d', C.nowus) end
  if #again > 0 then out.again = again end
  if P.paused then out.paused = 1 end
  if C.settings > 0 then out.settings = C.settings end
  if next(P.rates) then out.rates = P.rates end
  if next(P.firsts) then out.fresh = P.firsts end
  if P.I and #P.I.resolve > 0 then out.resolve = P.I.resolve end
  if P.I and next(P.I.used) then out.addrs = P.I.used end
  reply[#reply + 1] = cjson.encode(out)
  for _, v in ipairs(P.got) do reply[#reply + 1] = v end
  return reply
end
