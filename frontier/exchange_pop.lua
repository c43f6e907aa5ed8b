-- requires: exchange_guard pop hostbucket addrs
-- exchange_pop.lua: an exchange's pop (steps 8 to 11 of exchange.lua): how
-- many URLs a budget leaves room for, the due hosts' URLs popped each with
-- its host's token and leased, when to ask again, the crawl's end, and the
-- reply.

-- 8. ex_budget: with a page budget, how many URLs the pop may hand out.
-- The budget holds for the whole crawl, exactly: a URL in flight may still
-- become a page, so it counts against the budget already. (A budget of
-- -1 is this shard's share, stats' allow.)
local function ex_budget(X)
  local A, K = X.A, X.K
  X.W = math.max(0, (A.want or 0) - #X.again) -- a late URL kept is one of the URLs wanted (ex_again)
  X.budget = A.budget or 0
  X.limited = X.budget ~= 0
  if not X.limited then return end
  if X.budget < 0 then X.budget = tonumber(redis.call('HGET', K.stats, 'allow') or '0') end
  X.pages = tonumber(redis.call('HGET', K.stats, 'pages') or '0')
  local room = X.budget - X.pages - redis.call('ZCARD', K.leases)
  if room <= 0 and X.W > 0 then X.wait = -1 end -- nothing to pop until a page ends: back off
  X.W = math.max(0, math.min(X.W, room))
end

-- ex_due is a round's due hosts (host, tat, host, tat, …: at most m, whose
-- next token's window opens by the horizon), the longest queues first, and
-- which of them reached the cap of pages a host. It notes in X.marks those
-- marked in slowed, whose bucket hashes hold something to read: one HMGET
-- of slowed a round, and none when slowed is empty.
local function ex_due(X, m)
  local K = X.K
  local due = redis.call('ZRANGEBYSCORE', X.pready, '-inf', fr_tat(X.reach), 'WITHSCORES', 'LIMIT', '0', fr_int(m))
  local capped = {}
  if #due == 0 then return due, capped end
  local hosts = {}
  for i = 1, #due, 2 do hosts[#hosts + 1] = due[i] end
  if X.anySlowed then
    local v = redis.call('HMGET', K.slowed, unpack(hosts))
    for i, host in ipairs(hosts) do X.marks[host] = v[i] end
  end
  if X.anyCapped then
    local v = redis.call('HMGET', K.capped, unpack(hosts))
    for i, host in ipairs(hosts) do capped[host] = v[i] and tonumber(v[i]) >= X.A.host_max end
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
local function ex_drop_blocked(X, host, dry)
  local n, gone = fr_drop_blocked(X.Q, host, X.K.results, X.A.results_cap or 0, 1000)
  if gone then dry[#dry + 1] = host end
  return n > 0
end

-- ex_drop_capped: a host that had its pages has what is queued for it
-- dropped and counted, a thousand URLs a visit, its highest levels first;
-- its queue emptied, it leaves ready (dry). It reports whether anything
-- moved.
local function ex_drop_capped(X, host, dry)
  local n, gone = fr_pop(X.Q, host, 1000, {})
  if n > 0 then
    redis.call('HINCRBY', X.K.stats, 'skipped_links:max_pages_per_host', fr_int(n))
    X.taken = X.taken + n
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
local function ex_pop_host(X, host, tat, q, dry)
  local k, b, r, size, first = hb_tokens(X, host, q, tat)
  local slots, early, late, anext
  if k > 0 and X.ip and r > 0 and not hb_rule(X, host) then
    -- Its address's bucket too (addrs.lua): a host of a rule of its own
    -- keeps to that alone.
    if not X.addrOf[host] then k, b = 0, tat -- no address known yet: the worker resolves it first
    else
      slots, early, late, anext = ip_slots(X, host, k, r, size, tat)
      k = #slots
      if k == 0 then b = math.max(tat, anext) end -- due again when its address has a token
    end
  end
  if k == 0 then
    X.visited[host] = true
    if b ~= tat then
      X.readyAdd[#X.readyAdd + 1] = fr_tat(b)
      X.readyAdd[#X.readyAdd + 1] = host
    end
    return false
  end
  local n, gone = fr_pop(X.Q, host, k, X.got)
  X.taken = X.taken + n
  if n > 0 then
    local tat2 = X.tnow -- no limit: its turn moves behind the others'
    if slots then
      tat2 = ip_take(X, host, slots, n, early, late, r)
      hb_granted(X, host, b)
    elseif r > 0 then
      tat2 = hb_take(X, n, r, size, first)
      hb_granted(X, host, b)
    else
      for _ = 1, n do
        X.slots[#X.slots + 1], X.froms[#X.froms + 1], X.untils[#X.untils + 1] = 0, 0, -1
      end
    end
    local rule = hb_rule(X, host)
    if rule then X.rates[host] = rule[1] end -- the worker weighs a Crawl-delay against it
    if b.delay > 0 then
      X.delays[host] = b.delay
    elseif tat <= X.tnow then -- its bucket was full: no grant before this pop
      X.firsts[host] = fr_tat(tat2)
    end
    tat = tat2
  end
  if gone then
    dry[#dry + 1] = host
    if tat > X.tnow then
      X.refillAdd[#X.refillAdd + 1] = fr_tat(tat)
      X.refillAdd[#X.refillAdd + 1] = host
    end
  elseif n > 0 then
    X.readyAdd[#X.readyAdd + 1] = fr_tat(tat)
    X.readyAdd[#X.readyAdd + 1] = host
  end
  return n > 0
end

-- ex_pop_round pops from the hosts due now, shared out among them (at most
-- per each), and moves their scores; it reports whether it found any due
-- host and whether anything moved.
local function ex_pop_round(X)
  local m = X.W - #X.got / 2
  local due, capped = ex_due(X, m)
  if #due == 0 then return false, false end
  local per = math.ceil(m / (#due / 2))
  local dry, moved = {}, false
  if X.ip then
    local hosts = {}
    for i = 1, #due, 2 do hosts[#hosts + 1] = due[i] end
    ip_addresses(X, hosts)
  end
  for i = 1, #due, 2 do
    local host, tat = due[i], tonumber(due[i + 1])
    local q = math.min(per, X.W - #X.got / 2)
    if q <= 0 then break end
    if X.visited[host] then
      -- not due: looked at already by this call
    elseif capped[host] then
      moved = ex_drop_capped(X, host, dry) or moved
    elseif hb_blocked(X, host) then
      moved = ex_drop_blocked(X, host, dry) or moved
    else
      moved = ex_pop_host(X, host, tat, q, dry) or moved
    end
  end
  if #dry > 0 then redis.call('ZREM', X.pready, unpack(dry)) end
  if #X.readyAdd > 0 then
    redis.call('ZADD', X.pready, unpack(X.readyAdd))
    X.readyAdd = {}
  end
  return true, moved or #dry > 0
end

-- ex_lease puts the popped URLs under fresh leases, the i-th under the
-- i-th lease id the call brought.
local function ex_lease(X)
  local M = #X.got / 2
  if M == 0 then return end
  local exp = {}
  local untl = fr_int(X.now + (X.A.lease_ms or 0))
  for i = 1, M do
    exp[2 * i - 1] = untl
    exp[2 * i] = ex_text(X, X.A.ids + i - 1) .. '\n' .. X.got[2 * i - 1] .. '\n' .. X.got[2 * i]
  end
  redis.call('ZADD', X.K.leases, unpack(exp))
end

-- ex_next_wait: when fewer URLs than wanted were popped, how long until a
-- host is due (-1: nothing queued). A host whose queue ran dry stays in
-- ready until its bucket is full; with nothing queued at all, nothing is
-- coming due.
local function ex_next_wait(X)
  X.queued = X.queued or fr_queued(X.Q)
  X.wait = -1
  if X.queued > 0 then
    local nxt = redis.call('ZRANGE', X.pready, 0, 0, 'WITHSCORES')
    if #nxt == 2 then X.wait = math.max(0, math.ceil(tonumber(nxt[2]) - X.reach)) end
  end
end

-- 9. ex_pop: up to W URLs of hosts that are due, each URL with a token of
-- its host's bucket (tokens.lua), taken here: a host whose bucket is
-- empty or paused is due when it next has a token, and is not offered
-- before. A host's ready score is its bucket's tat: the time the bucket
-- is full again, with a burst of 1 the time its next token comes; taking
-- tokens is the ZADD that moves it, so a polite pop costs no call a host
-- for its bucket. A token is a window of time (tb_window): a host whose
-- next token's window opens by the horizon (ahead_ms from now) counts as
-- due, its tokens are reserved, and the worker fetches each URL in its
-- window, so that calls may be ahead_ms apart without a token coming too
-- late. Only hosts marked in slowed (a pause, a Crawl-delay, an adaptive
-- interval) have a bucket hash worth reading.
local function ex_pop(X)
  local A, K = X.A, X.K
  X.delays, X.firsts, X.rates = {}, {}, {} -- the reply's delays, fresh and rates
  X.slots, X.froms, X.untils, X.tokened = {}, {}, {}, false
  X.least, X.tnow = A.least_ms or 0, X.nowus / 1000 -- now, ms with a fraction: the tokens' clock
  X.horizon = X.tnow + (A.ahead_ms or 0)
  ip_begin(X, A)
  X.reach = X.horizon -- a host whose tat is by reach has a token whose window opens by the horizon
  if X.rate > 0 then X.reach = X.horizon + tb_window(X.rate, X.burst, X.least) end
  if X.W <= 0 then return end
  if X.stale then return end -- the caller reads the new settings, and asks again at once (wait 0)
  if redis.call('EXISTS', K.paused) == 1 then -- the crawl is paused (hold.lua): nothing is handed out
    X.paused, X.wait = true, -1
    return
  end
  X.anySlowed = redis.call('EXISTS', K.slowed) == 1
  -- A host of its own rate may have tokens whose windows open earlier
  -- than the crawl's reach says: the reach is the widest.
  for _, rule in pairs(hb_rules(X)) do
    if rule and rule[1] > 0 then X.reach = math.max(X.reach, X.horizon + tb_window(rule[1], rule[2], X.least)) end
  end
  -- Hosts that reached the cap of pages are marked in capped when their
  -- count crosses it: while none has, a round reads nothing for the cap.
  X.anyCapped = (A.host_max or 0) > 0 and redis.call('EXISTS', K.capped) == 1
  X.marks, X.visited, X.readyAdd, X.refillAdd, X.taken = {}, {}, {}, {}, 0
  for _ = 1, 4 do
    if X.W - #X.got / 2 <= 0 then break end
    local found, moved = ex_pop_round(X)
    if not found or not moved then break end
  end
  if X.ip then ip_write(X) end
  if #X.refillAdd > 0 then redis.call('ZADD', K.refill, unpack(X.refillAdd)) end
  -- A bucket full again needs no entry: refill keeps only those filling.
  redis.call('ZREMRANGEBYSCORE', K.refill, '-inf', fr_int(X.now))
  if X.taken > 0 then X.queued = fr_count(X.Q, -X.taken) end
  ex_lease(X)
  if #X.got / 2 < X.W then ex_next_wait(X) end
  if #X.got == 0 then X.done = redis.call('EXISTS', K.done) end
end
