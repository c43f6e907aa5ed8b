-- requires: exchange_call pop
-- exchange_take.lua: the steps of take.lua, the third of an exchange's
-- scripts: the URLs handout.lua granted taken off their hosts' queues and
-- leased, the queues of capped and blocked hosts dropped.

-- ex_granted is what handout.lua granted this exchange (its grants key,
-- read and deleted): hosts and counts (the hosts, in order, and how many
-- URLs each), addrs (with a cap per address: each host's address whose
-- slots were reserved, or false), drops (host, 'capped' or 'blocked', …), and n, the URLs
-- granted in all. A grant left by another exchange (one whose take never
-- came) is no grant of this one.
local function ex_granted(C)
  local raw = redis.call('GET', C.K.grants)
  if raw then redis.call('DEL', C.K.grants) end
  local g = raw and cjson.decode(raw)
  if not g or g.c ~= C.A.expect then return {hosts = {}, counts = {}, drops = {}, n = 0} end
  g.n = 0
  for _, n in ipairs(g.counts) do g.n = g.n + n end
  return g
end

-- ex_take_room is how many of n URLs granted may be leased: with a page
-- budget, those the budget has room for now. The grant counted the leases
-- held when it ran; others' takes since may have leased more, and a URL in
-- flight counts against the budget already (ex_budget).
local function ex_take_room(C, n)
  local budget, pages = ex_page_budget(C)
  if budget == 0 then return n end
  return math.max(0, math.min(n, budget - pages - redis.call('ZCARD', C.K.leases)))
end

-- ex_drop_queue: a host that had its pages has a thousand of its queued
-- URLs dropped and counted (its highest levels first); a blocked host's
-- end with their records (fr_drop_blocked). It returns how many URLs
-- left the count of those queued, and whether the queue ran dry.
local function ex_drop_queue(C, host, why)
  if why == 'blocked' then
    local rule = redis.call('HGET', C.K.hostrules, host)
    local _, gone = fr_drop_blocked(C.Q, host, C.K.results, C.A.results_cap or 0, 1000, fr_blocked(rule))
    return 0, gone -- counted off by fr_drop_blocked
  end
  local n, gone = fr_pop(C.Q, host, 1000, {})
  if n > 0 then redis.call('HINCRBY', C.K.stats, 'skipped_links:max_pages_per_host', fr_int(n)) end
  return n, gone
end

-- ex_settle_dry: hosts whose queues ran dry leave the lane's ready set,
-- for refill while their buckets are still filling (a URL queued for one
-- brings it back with that tat: queue.lua), or for good when full.
local function ex_settle_dry(C, dry)
  if #dry == 0 then return end
  local tats = redis.call('ZMSCORE', C.pready, unpack(dry))
  local refill = {}
  for i, host in ipairs(dry) do
    local tat = tonumber(tats[i] or '0') or 0
    if tat > C.now then
      refill[#refill + 1] = fr_tat(tat)
      refill[#refill + 1] = host
    end
  end
  redis.call('ZREM', C.pready, unpack(dry))
  if #refill > 0 then redis.call('ZADD', C.K.refill, unpack(refill)) end
end

-- ex_take takes up to room of the URLs granted G off their hosts' queues,
-- in the grant's order, and drops the queues it names. It returns the
-- URLs taken (host, item-json, …), and how many each grant gave (G.took,
-- by the grant's place). A queue that gives fewer than its
-- grant (elements set aside, or another process's take came first) leaves
-- the rest of its tokens spent: a host is asked less often, never more.
local function ex_take(C, G, room)
  local got, dry, taken = {}, {}, 0
  G.took = {}
  for i = 1, #G.drops, 2 do
    local n, gone = ex_drop_queue(C, G.drops[i], G.drops[i + 1])
    taken = taken + n
    if gone then dry[#dry + 1] = G.drops[i] end
  end
  for i, host in ipairs(G.hosts) do
    local q = math.min(G.counts[i], room - #got / 2)
    if q <= 0 then break end
    local n, gone = fr_pop(C.Q, host, q, got)
    G.took[i] = n
    taken = taken + n
    if gone then dry[#dry + 1] = host end
  end
  ex_settle_dry(C, dry)
  if taken > 0 then fr_count(C.Q, -taken) end
  return got
end

-- ex_lease puts the URLs taken under fresh leases, the i-th under the
-- i-th lease id the call brought; with a cap of requests in flight to a
-- host, each grant's reserved slots pass to the leases it gave
-- (hostslots.lua), those it did not give end.
local function ex_lease(C, G, got)
  local M = #got / 2
  local exp = {}
  local untl = fr_int(C.now + (C.A.lease_ms or 0))
  for i = 1, M do
    exp[2 * i - 1] = untl
    exp[2 * i] = ex_text(C, C.A.ids + i - 1) .. '\n' .. got[2 * i - 1] .. '\n' .. got[2 * i]
  end
  if M > 0 then redis.call('ZADD', C.K.leases, unpack(exp)) end
  local S = ex_slots(C)
  if S.cap <= 0 then return end
  local at = 0
  for i, host in ipairs(G.hosts) do
    local members = {}
    for j = 1, G.took[i] or 0 do members[j] = exp[2 * (at + j)] end
    at = at + #members
    hs_lease(S, host, G.addrs and G.addrs[i] or false, G.counts[i], ex_slot_tag(C, i), members)
  end
end
