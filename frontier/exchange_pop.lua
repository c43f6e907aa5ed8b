-- requires: exchange_call pop addrs hostbucket
-- exchange_pop.lua: an exchange's pop (steps 8 to 11 of exchange.lua): how
-- many URLs a budget leaves room for, the due hosts' URLs popped each with
-- its host's token and leased, when to ask again, the crawl's end, and the
-- reply.

-- ex_budget: with a page budget, how many URLs the pop may hand out.
-- The budget holds for the whole crawl, exactly: a URL in flight may still
-- become a page, so it counts against the budget already. (A budget of
-- -1 is this shard's share, stats' allow.) It returns B: want (URLs the
-- pop may hand out: those wanted less the late ones kept, nkept),
-- limited (a budget holds), budget, pages (fetched, with a budget) and
-- wait (-1: no room until a page ends: back off; else 0).
local function ex_budget(C, nkept)
  local A, K = C.A, C.K
  local B = {want = math.max(0, (A.want or 0) - nkept), wait = 0}
  B.limited = (A.budget or 0) ~= 0
  if not B.limited then
    B.budget, B.pages = 0, 0
    return B
  end
  B.budget, B.pages = ex_page_budget(C)
  local room = B.budget - B.pages - redis.call('ZCARD', K.leases)
  if room <= 0 and B.want > 0 then B.wait = -1 end
  B.want = math.max(0, math.min(B.want, room))
  return B
end

-- The pop's state, P (ex_pop), which its helpers below share: the call C
-- and its token clock H, the address state I (addrs.lua; false without
-- politeness per address), W (URLs it may hand out), got (popped: host,
-- json, host, json, …), G (their tokens: hostbucket.lua's hb_grants), the
-- reply's delays, fresh and rates (host -> …), reach (a host whose tat is
-- by it has a token whose window opens by the horizon), anySlowed and
-- anyCapped (slowed, capped exist), visited (hosts looked at), readyAdd
-- and refillAdd (scores to write), taken (URLs taken from the queues),
-- queued (URLs left queued, once counted), wait, paused, done.

-- ex_due is a round's due hosts (host, tat, host, tat, …: at most m, whose
-- next token's window opens by the horizon), the longest queues first, and
-- which of them reached the cap of pages a host. It notes in H.marks those
-- marked in slowed, whose bucket hashes hold something to read: one HMGET
-- of slowed a round, and none when slowed is empty.
local function ex_due(P, m)
  local K = P.C.K
  local due = redis.call('ZRANGEBYSCORE', P.C.pready, '-inf', fr_tat(P.reach), 'WITHSCORES', 'LIMIT', '0', fr_int(m))
  local capped = {}
  if #due == 0 then return due, capped end
  local hosts = {}
  for i = 1, #due, 2 do hosts[#hosts + 1] = due[i] end
  if P.anySlowed then
    local v = redis.call('HMGET', K.slowed, unpack(hosts))
    for i, host in ipairs(hosts) do P.H.marks[host] = v[i] end
  end
  if P.anyCapped then
    local v = redis.call('HMGET', K.capped, unpack(hosts))
    for i, host in ipairs(hosts) do capped[host] = v[i] and tonumber(v[i]) >= P.C.A.host_max end
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
local function ex_drop_blocked(P, host, dry)
  local C = P.C
  local n, gone = fr_drop_blocked(C.Q, host, C.K.results, C.A.results_cap or 0, 1000)
  if gone then dry[#dry + 1] = host end
  return n > 0
end

-- ex_drop_capped: a host that had its pages has what is queued for it
-- dropped and counted, a thousand URLs a visit, its highest levels first;
-- its queue emptied, it leaves ready (dry). It reports whether anything
-- moved.
local function ex_drop_capped(P, host, dry)
  local n, gone = fr_pop(P.C.Q, host, 1000, {})
  if n > 0 then
    redis.call('HINCRBY', P.C.K.stats, 'skipped_links:max_pages_per_host', fr_int(n))
    P.taken = P.taken + n
  end
  if gone then dry[#dry + 1] = host end
  return n > 0
end

-- ex_pop_host pops up to q URLs of a due host with a token each; a host
-- with no token by the horizon (a pause, a delay of its own) is not
-- looked at again this call, and its score says when it has one. A host
-- popped moves behind the others: its score becomes its tat after the
-- tokens taken (without a limit, now). One whose queue ran dry leaves
-- ready (dry), for refill while its bucket is still filling (a URL queued
-- for it brings it back with that tat), or for good when it is full.
-- It reports whether anything moved.
local function ex_pop_host(P, host, tat, q, dry)
  local H, I = P.H, P.I
  local k, b, r, size, first = hb_tokens(H, host, q, tat)
  local slots, early, late, anext
  if k > 0 and I and r > 0 and not hb_rule(H, host) then
    -- Its address's bucket too (addrs.lua): a host of a rule of its own
    -- keeps to that alone.
    if not I.addrOf[host] then k, b = 0, tat -- no address known yet: the worker resolves it first
    else
      slots, early, late, anext = ip_slots(I, H, host, k, r, size, tat)
      k = #slots
      if k == 0 then b = math.max(tat, anext) end -- due again when its address has a token
    end
  end
  if k == 0 then
    P.visited[host] = true
    if b ~= tat then
      P.readyAdd[#P.readyAdd + 1] = fr_tat(b)
      P.readyAdd[#P.readyAdd + 1] = host
    end
    return false
  end
  local n, gone = fr_pop(P.C.Q, host, k, P.got)
  P.taken = P.taken + n
  if n > 0 then
    local tat2 = H.tnow -- no limit: its turn moves behind the others'
    if slots then
      hb_grant_slots(P.G, H.tnow, slots, n, early, late)
      tat2 = ip_take(I, host, slots, n, r)
      hb_granted(H, host, b)
    elseif r > 0 then
      tat2 = hb_take(H, P.G, n, r, size, first)
      hb_granted(H, host, b)
    else
      for _ = 1, n do hb_grant(P.G) end
    end
    local rule = hb_rule(H, host)
    if rule then P.rates[host] = rule[1] end -- the worker weighs a Crawl-delay against it
    if b.delay > 0 then
      P.delays[host] = b.delay
    elseif tat <= H.tnow then -- its bucket was full: no grant before this pop
      P.firsts[host] = fr_tat(tat2)
    end
    tat = tat2
  end
  if gone then
    dry[#dry + 1] = host
    if tat > H.tnow then
      P.refillAdd[#P.refillAdd + 1] = fr_tat(tat)
      P.refillAdd[#P.refillAdd + 1] = host
    end
  elseif n > 0 then
    P.readyAdd[#P.readyAdd + 1] = fr_tat(tat)
    P.readyAdd[#P.readyAdd + 1] = host
  end
  return n > 0
end

-- ex_pop_round pops from the hosts due now, shared out among them (at most
-- per each), and moves their scores; it reports whether it found any due
-- host and whether anything moved.
local function ex_pop_round(P)
  local m = P.W - #P.got / 2
  local due, capped = ex_due(P, m)
  if #due == 0 then return false, false end
  local per = math.ceil(m / (#due / 2))
  local dry, moved = {}, false
  if P.I then
    local hosts = {}
    for i = 1, #due, 2 do hosts[#hosts + 1] = due[i] end
    ip_addresses(P.I, hosts)
  end
  for i = 1, #due, 2 do
    local host, tat = due[i], tonumber(due[i + 1])
    local q = math.min(per, P.W - #P.got / 2)
    if q <= 0 then break end
    if P.visited[host] then
      -- not due: looked at already by this call
    elseif capped[host] then
      moved = ex_drop_capped(P, host, dry) or moved
    elseif hb_blocked(P.H, host) then
      moved = ex_drop_blocked(P, host, dry) or moved
    else
      moved = ex_pop_host(P, host, tat, q, dry) or moved
    end
  end
  if #dry > 0 then redis.call('ZREM', P.C.pready, unpack(dry)) end
  if #P.readyAdd > 0 then
    redis.call('ZADD', P.C.pready, unpack(P.readyAdd))
    P.readyAdd = {}
  end
  return true, moved or #dry > 0
end

-- ex_lease puts the popped URLs under fresh leases, the i-th under the
-- i-th lease id the call brought.
local function ex_lease(P)
  local C, M = P.C, #P.got / 2
  if M == 0 then return end
  local exp = {}
  local untl = fr_int(C.now + (C.A.lease_ms or 0))
  for i = 1, M do
    exp[2 * i - 1] = untl
    exp[2 * i] = ex_text(C, C.A.ids + i - 1) .. '\n' .. P.got[2 * i - 1] .. '\n' .. P.got[2 * i]
  end
  redis.call('ZADD', C.K.leases, unpack(exp))
end

-- ex_next_wait: when fewer URLs than wanted were popped, how long until a
-- host is due (-1: nothing queued). A host whose queue ran dry stays in
-- ready until its bucket is full; with nothing queued at all, nothing is
-- coming due.
local function ex_next_wait(P)
  P.queued = P.queued or fr_queued(P.C.Q)
  P.wait = -1
  if P.queued > 0 then
    local nxt = redis.call('ZRANGE', P.C.pready, 0, 0, 'WITHSCORES')
    if #nxt == 2 then P.wait = math.max(0, math.ceil(tonumber(nxt[2]) - P.reach)) end
  end
end

-- ex_pop_state is the pop's state (P, above) at its start, for B.want
-- URLs by the token clock H.
local function ex_pop_state(C, H, B)
  local P = {C = C, H = H, I = ip_begin(H, C.A, C.K.queues, C.now), W = B.want, got = {}, G = hb_grants(),
    delays = {}, firsts = {}, rates = {}, reach = H.horizon, anySlowed = false, anyCapped = false, visited = {},
    readyAdd = {}, refillAdd = {}, taken = 0, queued = false, wait = B.wait, paused = false, done = 0}
  if C.rate > 0 then P.reach = H.horizon + tb_window(C.rate, C.burst, H.least) end
  return P
end

-- ex_pop: up to B.want URLs of hosts that are due, each URL with a
-- token of its host's bucket (tokens.lua), taken here by the call's token
-- clock H: a host whose bucket is empty or paused is due when it next has
-- a token, and is not offered before. A host's ready score is its
-- bucket's tat: the time the bucket is full again, with a burst of 1 the
-- time its next token comes; taking tokens is the ZADD that moves it, so
-- a polite pop costs no call a host for its bucket. A token is a window of
-- time (tb_window): a host whose next token's window opens by the horizon
-- (ahead_ms from now) counts as due, its tokens are reserved, and the
-- worker fetches each URL in its window, so that calls may be ahead_ms
-- apart without a token coming too late. Only hosts marked in slowed (a
-- pause, a Crawl-delay, an adaptive interval) have a bucket hash worth
-- reading. It returns the pop's state, what it handed out in it.
local function ex_pop(C, H, B)
  local A, K = C.A, C.K
  local P = ex_pop_state(C, H, B)
  if P.W <= 0 then return P end
  if C.stale then return P end -- the caller reads the new settings, and asks again at once (wait 0)
  if redis.call('EXISTS', K.paused) == 1 then -- the crawl is paused (hold.lua): nothing is handed out
    P.paused, P.wait = true, -1
    return P
  end
  P.anySlowed = redis.call('EXISTS', K.slowed) == 1
  -- A host of its own rate may have tokens whose windows open earlier
  -- than the crawl's reach says: the reach is the widest.
  for _, rule in pairs(hb_rules(H)) do
    if rule and rule[1] > 0 then P.reach = math.max(P.reach, H.horizon + tb_window(rule[1], rule[2], H.least)) end
  end
  -- Hosts that reached the cap of pages are marked in capped when their
  -- count crosses it: while none has, a round reads nothing for the cap.
  P.anyCapped = (A.host_max or 0) > 0 and redis.call('EXISTS', K.capped) == 1
  for _ = 1, 4 do
    if P.W - #P.got / 2 <= 0 then break end
    local found, moved = ex_pop_round(P)
    if not found or not moved then break end
  end
  if P.I then ip_write(P.I) end
  if #P.refillAdd > 0 then redis.call('ZADD', K.refill, unpack(P.refillAdd)) end
  -- A bucket full again needs no entry: refill keeps only those filling.
  redis.call('ZREMRANGEBYSCORE', K.refill, '-inf', fr_int(C.now))
  if P.taken > 0 then P.queued = fr_count(C.Q, -P.taken) end
  ex_lease(P)
  if #P.got / 2 < P.W then ex_next_wait(P) end
  if #P.got == 0 then P.done = redis.call('EXISTS', K.done) end
  return P
end
