-- requires: base keys tokens
-- hostbucket.lua: a host's token bucket as the frontier keeps it, for
-- every script that takes or gives back a host's token (the exchange's
-- pop, token.lua): its rate (the crawl's, its own rule's, or its own
-- delay's), its pause, and the tokens taken from it, by politeness's
-- arithmetic (tokens.lua: tb_take, tb_window, tb_refund, tb_opens). The
-- bucket's tat is the host's score in its ready set (or refill), ms; its
-- hash (buckets .. host) holds a pause, a Crawl-delay and an adaptive
-- interval, worth reading only for hosts marked in slowed.
-- The functions take the call's clock H (hb_clock: its keys, the crawl's
-- rate, the tokens' now and horizon, and the hosts' marks and rules as it
-- reads them), and hb_take the list of grants it appends to (hb_grants).

-- hb_clock is the context of a call that takes hosts' tokens: its keys K
-- (slowed, buckets, hostrules, stats), the crawl's rate and burst (rate 0:
-- no limit), a window's least (ms), the tokens' clock (nowus: Redis's now,
-- µs; tnow, ms with a fraction) and horizon (ahead ms after tnow: a
-- token whose window opens by then may be taken), and what the call
-- learns as it goes: marks (host -> its mark in slowed, read by the
-- caller) and rules (hb_rules, read once).
local function hb_clock(K, rate, burst, least, nowus, ahead)
  local tnow = nowus / 1000
  return {K = K, rate = rate, burst = burst, least = least, nowus = nowus, tnow = tnow,
    horizon = tnow + ahead, marks = {}, rules = false}
end

-- hb_grants is an empty list of the tokens a call hands out, in order:
-- per token its slot, and when its window opens and closes (from, until),
-- µs from the clock's now (until -1: no limit, no end); any, whether one
-- was a token (not a URL of a host without a limit).
local function hb_grants() return {slots = {}, froms = {}, untils = {}, any = false} end

-- hb_grant appends to grants G a token of slot s (ms, the clock's) whose
-- window is [from, to); with no s, a URL of a host without a limit.
local function hb_grant(G, tnow, s, from, to)
  local n = #G.slots + 1
  if not s then
    G.slots[n], G.froms[n], G.untils[n] = 0, 0, -1
    return
  end
  G.slots[n] = math.floor((s - tnow) * 1000 + 0.5)
  G.froms[n] = math.ceil(math.max(0, from - tnow) * 1000)
  G.untils[n] = math.floor((to - tnow) * 1000)
  G.any = true
end

-- hb_grant_slots appends to grants G the first n of slots (ms, the
-- clock's), each good from early ms before it until late ms after it:
-- the tokens of a host and its address together (addrs.lua's ip_slots).
local function hb_grant_slots(G, tnow, slots, n, early, late)
  for i = 1, n do hb_grant(G, tnow, slots[i], slots[i] - early, slots[i] + late) end
end

-- HB_NONE is the bucket hash of a host not marked in slowed: nothing but
-- the tat its ready score holds (tokens.lua).
local HB_NONE = {delay = 0, adapt = 0, paused_until = 0, pauses = 0}

-- The frontier's fields in a host's bucket hash beside the bucket's own
-- (tokens.lua): the host's own least interval, ms (robots.txt's
-- Crawl-delay: hostdelay.lua), and its interval by adaptive politeness, ms
-- (ex_adapt); frontier/doc.go.
local HB_FIELDS = {'delay', 'adapt'}

-- hb_bucket reads host's bucket hash (tb_read); a field that is not a
-- number is deleted (it reads as absent: the crawl's rate holds), and
-- counted (stats 'corrupt').
local function hb_bucket(H, host)
  local b = tb_read(H.K.buckets .. host, HB_FIELDS)
  if b.bad then
    redis.call('HDEL', H.K.buckets .. host, unpack(b.bad))
    redis.call('HINCRBY', H.K.stats, 'corrupt', fr_int(#b.bad))
  end
  return b
end

-- hb_parse_rule reads a hostrules value, "rate burst" ({rate, burst}) or
-- "block" ({0, 1, true}: nothing popped, its queue ended with records:
-- ex_drop_blocked), or false for none (or one not well formed: the
-- crawl's rate holds).
local function hb_parse_rule(v)
  if v == FR_BLOCKED then return {0, 1, true} end
  local r, b = string.match(v or '', '^(%S+) (%d+)$')
  r, b = tonumber(r), tonumber(b)
  if r and b and r >= 0 and b >= 1 then return {r, b} end
  return false
end

-- hb_rules are the shard's hosts with a rate of their own, set by hand
-- (crawler host HOST --rate: hostrules, host -> "rate burst", rate 0 for
-- no limit): host -> {rate, burst}. Read whole, once a call, and not at
-- all while no host has one: rules are set by a person, a few hosts'.
local function hb_rules(H)
  if H.rules then return H.rules end
  H.rules = {}
  if redis.call('EXISTS', H.K.hostrules) == 1 then
    local all = redis.call('HGETALL', H.K.hostrules)
    for i = 1, #all, 2 do H.rules[all[i]] = hb_parse_rule(all[i + 1]) end
  end
  return H.rules
end

-- hb_rule is host's own rule (hb_rules), or false.
local function hb_rule(H, host) return hb_rules(H)[host] or false end

-- hb_rate is host's rate and burst by its bucket b: its own rule's
-- (hb_rule) or the crawl's, or the slower of its own delay (Crawl-delay)
-- and its adaptive interval when that is slower (0: no limit).
local function hb_rate(H, b, host)
  local rate, burst = H.rate, H.burst
  local rule = hb_rule(H, host)
  if rule then rate, burst = rule[1], rule[2] end
  local interval = math.max(b.delay, b.adapt)
  if interval > 0 and (rate == 0 or 1000 / interval < rate) then return 1000 / interval, 1 end
  return rate, burst
end

-- hb_granted: host's bucket b gave a grant; a grant halves its count of
-- pauses (pause.lua).
local function hb_granted(H, host, b)
  if b.pauses > 0 then
    redis.call('HSET', H.K.buckets .. host, 'pauses', fr_int(math.floor(b.pauses / 2)))
  end
end

-- hb_paused_tat is the least tat bucket b may have: one whose first token
-- comes when its pause ends (0: not paused).
local function hb_paused_tat(b, r, size)
  if b.paused_until == 0 then return 0 end
  return math.ceil(b.paused_until / 1000) + (size - 1) * 1000 / r
end

-- hb_tokens is how many URLs host may have (at most q), given the tat
-- its score holds: that many, its bucket, its rate and burst (rate 0: no
-- limit), and its first token's slot; or 0 and the host's tat, raised
-- when a pause holds it past its score. The slots come an interval apart
-- from the tat (or now, when the bucket is full); the host has as many
-- tokens as have windows that open by the horizon (tb_window).
local function hb_tokens(H, host, q, tat)
  local b = HB_NONE
  if H.marks[host] then
    b = hb_bucket(H, host)
    if b.delay == 0 and b.adapt == 0 and H.nowus >= b.paused_until and (b.pauses == 0 or H.rate == 0) then
      redis.call('HDEL', H.K.slowed, host) -- nothing left to read (without a rate no grant halves pauses)
    end
  end
  local r, size = hb_rate(H, b, host)
  if H.nowus < b.paused_until then
    if r == 0 then return 0, math.max(tat, math.ceil(b.paused_until / 1000), H.horizon + 1) end
    return 0, math.max(tat, math.ceil(hb_paused_tat(b, r, size)))
  end
  if r == 0 then return q, b, 0, 1, 0 end -- no limit: nothing to take
  local first, early = math.max(tat, H.tnow), tb_window(r, size, H.least)
  local n = math.floor((H.horizon + early - first) * r / 1000) + 1
  if n < 1 then return 0, tat end
  return math.min(q, n), b, r, size, first
end

-- hb_blocked: host is blocked (crawler host --block).
local function hb_blocked(H, host)
  local rule = hb_rule(H, host)
  return rule and rule[3] or false
end

-- hb_take gives the n URLs popped from a host of rate r and burst
-- size, whose first token's slot is first, a token each, appended to
-- grants G: its slot, an interval after the last, and its window around
-- it (tb_window). It returns the host's tat after them.
local function hb_take(H, G, n, r, size, first)
  local interval, early, width = 1000 / r, tb_window(r, size, H.least)
  for i = 0, n - 1 do
    local slot = first + i * interval
    hb_grant(G, H.tnow, slot, slot - early, slot - early + width)
  end
  return (tb_take(first, H.tnow, interval, size, n))
end
