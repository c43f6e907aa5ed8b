-- requires: exchange_pop
-- exchange_end.lua: the handout's last step (handout.lua): its reply.

-- ex_reply is handout.lua's reply: 1, then one object (B, the budget's;
-- P, the grant's: the hosts granted and how many URLs each, their tokens
-- in the same order; whether the crawl is over).
local function ex_reply(C, B, P)
  local done = P.done
  if B.limited then done = redis.call('EXISTS', C.K.done) end
  local out = {pages = B.pages, done = done, wait = P.wait}
  if next(P.delays) then out.delays = P.delays end
  if #P.hosts > 0 then out.hosts, out.counts = P.hosts, P.counts end
  if P.G.any then
    out.slot, out.from, out['until'] = P.G.slots, P.G.froms, P.G.untils
  end
  if P.granted > 0 then out.now_us = string.format('%d', C.nowus) end
  if P.paused then out.paused = 1 end
  if C.settings > 0 then out.settings = C.settings end
  if next(P.rates) then out.rates = P.rates end
  if next(P.firsts) then out.fresh = P.firsts end
  if P.I and #P.I.resolve > 0 then out.resolve = P.I.resolve end
  if P.I and next(P.I.used) then out.addrs = P.I.used end
  return {1, cjson.encode(out)}
end
