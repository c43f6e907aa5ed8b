-- requires: base keys tokens
-- hostrate.lua: a host's token bucket as the frontier keeps it: its rate
-- (the crawl's, its own rule's, or its own delay's) and its pause, what
-- every script that takes or gives back a host's token reads
-- (hostbucket.lua takes them; the exchange's refunds give them back). The
-- bucket's tat is the host's score in its ready set (or refill), ms; its
-- hash (buckets .. host) holds a pause, a Crawl-delay and an adaptive
-- interval, worth reading only for hosts marked in slowed.
-- The functions take the call's clock H (hb_clock: its keys, the crawl's
-- rate, the tokens' now and horizon, and the hosts' marks and rules as it
-- reads them).

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
  if fr_blocked(v) then return {0, 1, true} end
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

-- hb_paused_tat is the least tat bucket b may have: one whose first token
-- comes when its pause ends (0: not paused).
local function hb_paused_tat(b, r, size)
  if b.paused_until == 0 then return 0 end
  return math.ceil(b.paused_until / 1000) + (size - 1) * 1000 / r
end

-- hb_blocked: host is blocked (crawler host --block).
local function hb_blocked(H, host)
  local rule = hb_rule(H, host)
  return rule and rule[3] or false
end
