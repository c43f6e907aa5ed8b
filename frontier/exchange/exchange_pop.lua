-- requires: exchange_call queue addrs hostbucket hostslots
-- exchange_pop.lua: the handout's grant (handout.lua): the due hosts each
-- granted URLs with their tokens, and when to ask again (how many URLs a
-- budget leaves room for: exchange_call.lua's ex_budget). The URLs
-- themselves are taken off the granted hosts' queues, and leased, by
-- take.lua in the same pipeline (exchange_take.lua), from the grants this
-- call leaves in the process's grants key.

-- The grant's state, P (ex_pop), which its helpers below share: the call
-- C and its token clock H, the address state I (addrs.lua; false without
-- politeness per address), W (URLs it may grant), granted (how many it
-- did), hosts and counts (the hosts granted, in order, and how many URLs
-- each), drops (hosts whose queues take.lua drops: host, 'capped' or
-- 'blocked', …), G (the granted URLs' tokens, in the same order:
-- hostbucket.lua's hb_grants), the reply's delays, fresh and rates (host
-- -> …), reach (a host whose tat is by it has a token whose window opens
-- by the horizon), anySlowed and anyCapped (slowed, capped exist),
-- visited (hosts looked at, or granted their whole queue), whole and
-- nwhole (the hosts granted their whole queue, and how many), readyAdd
-- (scores to write), wait, paused, done.

-- ex_due is a round's due hosts (host, tat, host, tat, …: at most m, whose
-- next token's window opens by the horizon), the longest queues first,
-- which of them reached the cap of pages a host, and their queues'
-- lengths (host -> URLs queued). It notes in H.marks those marked in
-- slowed, whose bucket hashes hold something to read: one HMGET of slowed
-- a round, and none when slowed is empty.
local function ex_due(P, m)
  local K = P.C.K
  -- Hosts granted their whole queue this call stay in ready (take.lua
  -- settles them) and may be due still: as many more are read, and left
  -- out, so that a round looks at m hosts it may grant.
  local due = redis.call('ZRANGEBYSCORE', P.C.pready, '-inf', fr_tat(P.reach), 'WITHSCORES', 'LIMIT', '0', fr_int(m + P.nwhole))
  if P.nwhole > 0 then
    local left = {}
    for i = 1, #due, 2 do
      if not P.whole[due[i]] and #left < 2 * m then
        left[#left + 1] = due[i]
        left[#left + 1] = due[i + 1]
      end
    end
    due = left
  end
  local capped, len = {}, {}
  if #due == 0 then return due, capped, len end
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
  local lens = redis.call('HMGET', K.lengths, unpack(hosts))
  for i, host in ipairs(hosts) do len[host] = tonumber(lens[i] or '0') or 0 end
  if #hosts == 1 then return due, capped, len end
  -- The longest queues go first: when fewer URLs are wanted than the
  -- round's hosts could give, those that lose are the ones with the
  -- least left, so that the hosts drain together rather than a few being
  -- left, late in the crawl, with URLs that come one an interval while
  -- loops wait. (Ties keep the tat order.)
  local order = {}
  for i = 1, #hosts do order[i] = i end
  table.sort(order, function(a, b)
    local la, lb = len[hosts[a]], len[hosts[b]]
    if la ~= lb then return la > lb end
    return a < b
  end)
  local sorted = {}
  for _, i in ipairs(order) do
    sorted[#sorted + 1] = due[2 * i - 1]
    sorted[#sorted + 1] = due[2 * i]
  end
  return sorted, capped, len
end

-- ex_drop: a host that had its pages, or is blocked, has its queue
-- dropped by take.lua (a thousand URLs a call); it is not looked at again
-- by this call.
local function ex_drop(P, host, why)
  P.drops[#P.drops + 1] = host
  P.drops[#P.drops + 1] = why
  P.visited[host] = true
end

-- ex_address: a due host of k tokens (its bucket b, rate r and burst
-- size, tat tat) and its address (addrs.lua, false while none is known):
-- its address's bucket takes its part too, a host of a rule of its own
-- keeping to that alone; and its address's slots (hostslots.lua), whoever
-- sets its rate, need the address known. It returns the tokens left, the
-- bucket (or the score to wait at), the address, and the slots, early and
-- late that ip_slots found (nil when the address's bucket had no part).
local function ex_address(P, host, k, b, r, size, tat)
  local H, I = P.H, P.I
  local addr = I and I.addrOf[host] or false
  local tokens = I and I.tokens and r > 0 and not hb_rule(H, host)
  if k > 0 and I and (tokens or P.S.ip) and not addr then
    return 0, tat, addr -- no address known yet: the worker resolves it first
  elseif k > 0 and tokens then
    local slots, early, late, anext = ip_slots(I, H, host, k, r, size, tat)
    if #slots == 0 then b = math.max(tat, anext) end -- due again when its address has a token
    return #slots, b, addr, slots, early, late
  end
  return k, b, addr
end

-- ex_hold: a due host gets no URL this call (no token by the horizon, or
-- no slot free); it is not looked at again, and waits at score, if that
-- is not its tat (nil: a parked host's score, always written).
local function ex_hold(P, host, tat, score)
  P.visited[host] = true
  if score ~= tat then
    P.readyAdd[#P.readyAdd + 1] = fr_tat(score)
    P.readyAdd[#P.readyAdd + 1] = host
  end
  return false
end

-- ex_grant_host grants up to q URLs of a due host whose queue holds len,
-- with a token each; a host with no token by the horizon (a pause, a
-- delay of its own) is not looked at again this call, and its score says
-- when it has one; a host with every slot held (seed --host-concurrency)
-- is parked until one ends (hostslots.lua). A host granted moves behind
-- the others: its score becomes its tat after the tokens taken (without a
-- limit, now). A host counted empty is granted one URL all the same:
-- take.lua finds its queue dry and settles it (its lists, its length,
-- its place in ready). A host granted its whole queue stays in ready with
-- its new tat: take.lua, which finds the queue dry, moves it to refill
-- (or out, its bucket full), so that a call cut short after this one
-- strands no URL. It reports whether it granted any.
local function ex_grant_host(P, host, tat, q, len)
  local H, I = P.H, P.I
  tat = math.min(tat, hs_parked(P.S, host) or tat) -- parked at its cap: its tat was kept aside
  local k, b, r, size, first = hb_tokens(H, host, q, tat)
  local addr, slots, early, late
  k, b, addr, slots, early, late = ex_address(P, host, k, b, r, size, tat)
  if k == 0 then return ex_hold(P, host, tat, b) end
  local room, lapse, byAddr = hs_room(P.S, host, addr)
  if room == 0 then return ex_hold(P, host, nil, hs_park(P.S, host, tat, lapse, byAddr and addr)) end
  local n = math.min(k, math.max(len, 1), room)
  if n >= len and not P.whole[host] then
    P.visited[host], P.whole[host], P.nwhole = true, true, P.nwhole + 1
  end
  P.hosts[#P.hosts + 1], P.counts[#P.counts + 1] = host, n
  P.addrs[#P.hosts] = addr
  hs_reserve(P.S, host, addr, n, ex_slot_tag(P.C, #P.hosts))
  P.granted = P.granted + n
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
  elseif tat <= H.tnow then -- its bucket was full: no grant before this one
    P.firsts[host] = fr_tat(tat2)
  end
  P.readyAdd[#P.readyAdd + 1] = fr_tat(tat2)
  P.readyAdd[#P.readyAdd + 1] = host
  return true
end

-- ex_pop_round grants URLs of the hosts due now, shared out among them
-- (at most per each), and moves their scores; it reports whether it
-- found any due host and whether anything was granted or dropped.
local function ex_pop_round(P)
  local m = P.W - P.granted
  local due, capped, len = ex_due(P, m)
  if #due == 0 then return false, false end
  local per = math.ceil(m / (#due / 2))
  local moved = false
  if P.I then
    local hosts = {}
    for i = 1, #due, 2 do hosts[#hosts + 1] = due[i] end
    ip_addresses(P.I, hosts)
  end
  for i = 1, #due, 2 do
    local host, tat = due[i], tonumber(due[i + 1])
    local q = math.min(per, P.W - P.granted)
    if q <= 0 then break end
    if P.visited[host] then
      -- not due: looked at already by this call
    elseif capped[host] then
      ex_drop(P, host, 'capped')
      moved = true
    elseif hb_blocked(P.H, host) then
      ex_drop(P, host, 'blocked')
      moved = true
    else
      moved = ex_grant_host(P, host, tat, q, len[host]) or moved
    end
  end
  if #P.readyAdd > 0 then
    redis.call('ZADD', P.C.pready, unpack(P.readyAdd))
    P.readyAdd = {}
  end
  return true, moved
end

-- ex_next_wait: when fewer URLs than wanted were granted, how long until
-- a host is due (-1: nothing queued past what was granted). A host whose
-- queue runs dry stays in ready until its bucket is full; one granted its
-- whole queue is not waited for.
local function ex_next_wait(P)
  P.wait = -1
  if fr_queued(P.C.Q) - P.granted <= 0 then return end
  local nxt = redis.call('ZRANGE', P.C.pready, 0, #P.hosts, 'WITHSCORES')
  for i = 1, #nxt, 2 do
    if not P.whole[nxt[i]] then
      P.wait = math.max(0, math.ceil(tonumber(nxt[i + 1]) - P.reach))
      return
    end
  end
end

-- ex_pop_state is the grant's state (P, above) at its start, for B.want
-- URLs by the token clock H.
local function ex_pop_state(C, H, B)
  local P = {C = C, H = H, I = ip_begin(H, C.A, C.K.queues, C.now), W = B.want, granted = 0, hosts = {}, counts = {}, addrs = {},
    drops = {}, G = hb_grants(), delays = {}, firsts = {}, rates = {}, reach = H.horizon, anySlowed = false,
    anyCapped = false, visited = {}, whole = {}, nwhole = 0, readyAdd = {}, wait = B.wait, paused = false, done = 0}
  if C.rate > 0 then P.reach = H.horizon + tb_window(C.rate, C.burst, H.least) end
  P.S = ex_slots(C)
  return P
end

-- ex_grants_write leaves the grant for take.lua, in the process's grants
-- key, under the count of the exchange it belongs to: the hosts and how
-- many URLs each, the hosts whose queues are dropped. It lives as long as
-- a lease: a take that never came (the pipeline cut short) leaves it to
-- expire, its tokens spent, and the next exchange's take reads none of
-- it.
local function ex_grants_write(C, P)
  if P.granted == 0 and #P.drops == 0 then return end
  local g = {c = C.A.expect, hosts = P.hosts, counts = P.counts, drops = P.drops}
  if P.S.ip then g.addrs = P.addrs end -- the addresses whose slots were reserved too (hostslots.lua)
  redis.call('SET', C.K.grants, cjson.encode(g), 'PX', fr_int(math.max(C.A.lease_ms or 0, 1000)))
end

-- ex_pop: up to B.want URLs granted of hosts that are due, each URL with
-- a token of its host's bucket (tokens.lua), taken here by the call's
-- token clock H: a host whose bucket is empty or paused is due when it
-- next has a token, and is not offered before. A host's ready score is its
-- bucket's tat: the time the bucket is full again, with a burst of 1 the
-- time its next token comes; taking tokens is the ZADD that moves it, so
-- a polite pop costs no call a host for its bucket. A token is a window of
-- time (tb_window): a host whose next token's window opens by the horizon
-- (ahead_ms from now) counts as due, its tokens are reserved, and the
-- worker fetches each URL in its window, so that calls may be ahead_ms
-- apart without a token coming too late. Only hosts marked in slowed (a
-- pause, a Crawl-delay, an adaptive interval) have a bucket hash worth
-- reading. No more URLs are granted a host than its queue holds
-- (lengths). It returns the grant's state, what it granted in it.
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
    if P.W - P.granted <= 0 then break end
    local found, moved = ex_pop_round(P)
    if not found or not moved then break end
  end
  if P.I then ip_write(P.I) end
  -- A bucket full again needs no entry: refill keeps only those filling.
  redis.call('ZREMRANGEBYSCORE', K.refill, '-inf', fr_int(C.now))
  if P.granted < P.W then ex_next_wait(P) end
  if P.granted == 0 then P.done = redis.call('EXISTS', K.done) end
  ex_grants_write(C, P)
  return P
end
