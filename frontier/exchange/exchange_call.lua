-- requires: contract keys queue hostrate hostslots
-- exchange_call.lua: the call an exchange's steps read, C (ex_call), in
-- each of its scripts: its keys by name (C.K), its arguments (C.A,
-- exchange.go's exchangeArgs), its clock, never written after it is made;
-- and the guard of the scripts after exchange.lua (ex_after). What a step
-- leaves for another it returns.

-- ex_text is the exchange's text n (1-based: a field marked "text").
local function ex_text(C, n) return ARGV[C.T + n] end

-- ex_call is the call C its steps read, for keys K (by name) and
-- arguments A whose texts follow ARGV[T]: the queues' keys, Redis's clock
-- (now, ms; nowus, µs: one TIME), the crawl's rate and burst. Both of an
-- exchange's scripts make it; the handout adds the settings in force
-- (ex_settings).
local function ex_call(K, A, T)
  local C = {K = K, A = A, T = T}
  C.Q = fr_keys(K.queues, K.ready, K.stats, K.lengths, K.refill, K.hostrules)
  C.pready = fr_ready_of(C.Q, A.lane) -- the pops' lane's ready set (lane: 'render' for a worker with a browser)
  C.Q.lifo = A.lifo == true
  C.Q.failed = K.failed -- a queue's elements not well formed go there (fr_set_aside)
  C.nowus = tb_now()
  C.now = math.floor(C.nowus / 1000) -- as fr_now reads TIME
  C.rate, C.burst = A.rate or 0, A.burst or 1
  C.settings, C.stale = 0, false
  return C
end

-- ex_page_budget is the crawl's page budget as the call's shard holds
-- it (A.budget; -1: this shard's share, stats' allow) and the pages
-- fetched, both 0 without a budget.
local function ex_page_budget(C)
  local budget = C.A.budget or 0
  if budget == 0 then return 0, 0 end
  if budget < 0 then budget = tonumber(redis.call('HGET', C.K.stats, 'allow') or '0') end
  return budget, tonumber(redis.call('HGET', C.K.stats, 'pages') or '0')
end

-- ex_kept is how many of the late leases the process gave back (kept:
-- texts, their members) are still held: those back.lua gave a new token
-- (each one of the URLs wanted), read as they stand.
local function ex_kept(C)
  local late = C.A.kept or {}
  if #late == 0 then return 0 end
  local ids = {}
  for i, t in ipairs(late) do ids[i] = ex_text(C, t) end
  local held, n = redis.call('ZMSCORE', C.K.leases, unpack(ids)), 0
  for i = 1, #ids do
    if held[i] then n = n + 1 end
  end
  return n
end

-- ex_budget: with a page budget, how many URLs the grant may hand out.
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

-- ex_settings reads the settings version in force here ('crawler set',
-- settings.lua) into C: a caller on older settings (stale) pops nothing
-- (ex_again, ex_pop), and learns the version from the reply, so that no
-- URL is handed out under settings older than the shard's.
local function ex_settings(C)
  C.settings = tonumber(redis.call('GET', C.K.settings) or '0') or 0
  C.stale = (C.A.settings or 0) < C.settings
end

-- ex_clock is the call's token clock (hostbucket.lua's hb_clock): the
-- late URLs' new tokens and the pop's are taken by it, their slots
-- counting from the call's nowus.
local function ex_clock(C)
  return hb_clock(C.K, C.rate, C.burst, C.A.least_ms or 0, C.nowus, C.A.ahead_ms or 0)
end

-- ex_add adds by to the stats field in stats, the counters a call bumps,
-- written once at its end (ex_write_stats).
local function ex_add(stats, field, by) stats[field] = (stats[field] or 0) + by end

-- ex_after is the guard of the scripts that run after exchange.lua in its
-- pipeline (back.lua, handout.lua, take.lua): their keys by name (EX_KEYS)
-- and arguments, or the reply that refuses the call before any write:
-- {0, Redis's count} where Redis does not hold the count of the process's
-- exchanges that exchange.lua leaves (expect), the GONE error where the
-- crawl is gone (reset, seeded anew: it has no count either), or the
-- error of a stats hash the steps cannot count in.
local function ex_after()
  local K = {}
  for i, name in ipairs(EX_KEYS) do K[name] = KEYS[i] end
  local A = cjson.decode(ARGV[1])
  local count = tonumber(redis.call('GET', K.counter) or '0') or -1
  if count ~= A.expect then
    if not fr_ours(K.config, A.instance) then return nil, nil, redis.error_reply(FR_GONE) end
    return nil, nil, {0, count}
  end
  local why = fr_unsound_stats(K.stats)
  if why then return nil, nil, redis.error_reply(why) end
  return K, A
end

-- ex_write_stats writes the counters the steps before bumped.
local function ex_write_stats(C, stats)
  for field, by in pairs(stats) do
    redis.call('HINCRBY', C.K.stats, field, fr_int(by))
  end
end

-- ex_drained: when the call ended leases (done, back) or acked outbox
-- entries, and now no lease is held, no outbox entry waits and nothing is
-- queued (or a page budget is spent), the crawl may be over: the
-- scheduler is told, so that it need not sweep often to notice. (The
-- handout after it pops nothing then: nothing is queued, or the budget
-- leaves no room.)
local function ex_drained(C, acked)
  local A, K = C.A, C.K
  local ended = #(A.done or {}) > 0 or #(A.back or {}) > 0 or acked > 0
  if not ended or redis.call('EXISTS', K.leases) == 1 or redis.call('EXISTS', K.outbox) == 1 then return end
  if fr_queued(C.Q) > 0 then
    if (A.budget or 0) == 0 then return end -- no budget: the queued URLs are to be fetched
    local budget, pages = ex_page_budget(C)
    if pages < budget then return end
  end
  redis.call('PUBLISH', K.queues .. 'wake', 'drained')
end

-- ex_slots is the call's state of hosts' slots (hostslots.lua: the cap of
-- requests in flight to a host), a grant's reservations lapsing as its
-- grants key does.
local function ex_slots(C)
  return hs_state(C.Q, C.K.leases, C.A.host_conc, C.now, C.now + math.max(C.A.lease_ms or 0, 1000), C.A.ip == true)
end

-- ex_slot_tag names the reservations of the i-th host of this exchange's
-- grant (unique: the process's grants key, the exchange's count).
local function ex_slot_tag(C, i) return C.K.grants .. ' ' .. fr_int(C.A.expect) .. ' ' .. fr_int(i) end
