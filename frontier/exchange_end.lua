-- requires: exchange_guard queue
-- exchange_end.lua: an exchange's end (steps 10 and 11 of exchange.lua):
-- whether the crawl may be over, and the reply.

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
